// narrow_to_wire / widen_from_wire: f32 values into and out of the dtype they travel in between
// ranks (bf16, f16; f32 copies), round to nearest even, bit for bit as precision/float_codec.hpp. The
// loops a host-memory backend runs while it packs one segment of a message and unpacks one: single
// threaded (they run on a communicator's progress thread, beside the compute threads) and
// vectorised by the compiler.
#pragma once

#include <cstddef>

#include "tessera/precision/dtype.hpp"

namespace tessera {

// dst (count) `wire` <- src (count) f32. Throws std::invalid_argument for a non-floating wire.
void narrow_to_wire(const float* src, void* dst, std::size_t count, DType wire);

// dst (count) f32 <- src (count) `wire` (exact). Throws std::invalid_argument for a non-floating wire.
void widen_from_wire(const void* src, float* dst, std::size_t count, DType wire);

}  // namespace tessera
