// reduce_in_order: the element-wise reduction every host-memory backend uses, in a fixed order so
// results are bit-identical run after run and across collectives (see communicator.hpp).
#pragma once

#include <cstddef>
#include <span>

#include "comm/reduce_op.hpp"
#include "precision/dtype.hpp"

namespace tessera {

// dst[i] = sources[0][i] (op) sources[1][i] (op) ... evaluated left to right, all host arrays of
// `count` elements of `dtype`. Floating dtypes accumulate in f32: bf16 and f16 are widened exactly,
// summed in f32 and rounded to their dtype once (round to nearest even). avg divides the f32 sum by
// sources.size() before that rounding. i32 sums wrap around (two's complement); avg is refused.
// dst may be exactly one of the sources (in place) but must not partially overlap any of them.
// Throws std::invalid_argument for avg on i32 or an empty source list.
void reduce_in_order(std::span<const void* const> sources, void* dst, std::size_t count,
                     DType dtype, ReduceOp op);

}  // namespace tessera
