// reduce_in_order: the element-wise reduction every host-memory backend uses, in a fixed order so
// results are bit-identical run after run and across collectives (see communicator.hpp).
// reduce_wire_in_order: the same reduction for f32 values that travel in a narrower wire dtype,
// reading this rank's f32 input and the peers' wire values and writing f32, in one pass.
#pragma once

#include <cstddef>
#include <span>

#include "tessera/comm/reduce_op.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

// dst[i] = sources[0][i] (op) sources[1][i] (op) ... evaluated left to right, all host arrays of
// `count` elements of `dtype`. Floating dtypes accumulate in f32: bf16 and f16 are widened exactly,
// summed in f32 and rounded to their dtype once (round to nearest even). avg divides the f32 sum by
// sources.size() before that rounding. i32 sums wrap around (two's complement); avg is refused.
// dst may be exactly one of the sources (in place) but must not partially overlap any of them.
// Throws std::invalid_argument for avg on i32 or an empty source list.
void reduce_in_order(std::span<const void* const> sources, void* dst, std::size_t count, DType dtype, ReduceOp op);

// One input of reduce_wire_in_order: `count` values of the wire dtype (a peer's message), or f32
// values that count as rounded to the wire dtype (this rank's own input, never narrowed in memory).
struct WireSource {
  const void* data = nullptr;
  bool f32 = false;
};

// dst (count) f32 = the wire-dtype result of reduce_in_order over the sources (each f32 source
// first rounded to `wire`, round to nearest even), widened back to f32. Bit for bit what narrowing
// the f32 sources, reduce_in_order in `wire` and widening the result give, without those passes.
// `wire` is f32, bf16 or f16 (f32: reduce_in_order in f32). dst may be exactly one of the f32
// sources (in place). Throws std::invalid_argument for a non-floating wire dtype or no sources.
void reduce_wire_in_order(std::span<const WireSource> sources, float* dst, std::size_t count, DType wire, ReduceOp op);

}  // namespace tessera
