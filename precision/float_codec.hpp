// Element codecs: how each floating DType is stored and widened to / narrowed from f32 (round to
// nearest even). Loops templated on a codec (conversion kernels, host reductions) share one
// definition of every dtype; TESSERA_HD so CUDA kernels can use them too.
#pragma once

#include <cstdint>

#include "tessera/precision/float_bits.hpp"
#include "tessera/precision/host_device.hpp"

namespace tessera {

struct F32Codec {
  using Storage = float;
  TESSERA_HD static float load(float x) { return x; }
  TESSERA_HD static float store(float x) { return x; }
};

struct BF16Codec {
  using Storage = std::uint16_t;
  TESSERA_HD static float load(std::uint16_t x) { return bf16_to_f32(x); }
  TESSERA_HD static std::uint16_t store(float x) { return f32_to_bf16(x); }
};

struct F16Codec {
  using Storage = std::uint16_t;
  TESSERA_HD static float load(std::uint16_t x) { return f16_to_f32(x); }
  TESSERA_HD static std::uint16_t store(float x) { return f32_to_f16(x); }
};

}  // namespace tessera
