// reduce_segment: what the MPI backend reduces a received segment with — reduce_in_order
// (comm/host_reduce.hpp), except in the commonest case, two f32 sources (two ranks), which it
// reduces in one pass instead of reduce_in_order's three through a block accumulator (load,
// accumulate, store): about twice as fast, and the same operations in the same order, so the same
// bits (tests/comm/mpi/segment_reduce_test.cpp compares the two).
#pragma once

#include <cstddef>
#include <span>

#include "tessera/comm/reduce_op.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

// As reduce_in_order: dst may be exactly one of the sources.
void reduce_segment(std::span<const void* const> sources, void* dst, std::size_t count, DType dtype, ReduceOp op);

}  // namespace tessera::detail
