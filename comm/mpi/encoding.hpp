// Encoding: the dtype of the caller's buffers and the dtype elements travel in between ranks.
#pragma once

#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

// The same for the plain collectives; f32 buffers and a bf16/f16 wire for the _f32 ones.
struct Encoding {
  DType buffer = DType::kF32;
  DType wire = DType::kF32;
  bool converts() const { return buffer != wire; }
};

}  // namespace tessera::detail
