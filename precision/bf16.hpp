// Bf16: one bfloat16 value as tensors of the compute dtype bf16 hold it, and the element access the
// typed kernels share: to_f32 widens (exactly), from_f32<T> narrows (round to nearest even, the bits
// of float_bits.hpp). A type of its own, so a kernel op taking Bf16* and one taking float* are two
// overloads of one entry (runtime/kernel_ops.hpp); TESSERA_HD, so CPU and CUDA kernels share it.
#pragma once

#include <cstdint>

#include "tessera/precision/dtype.hpp"
#include "tessera/precision/float_bits.hpp"
#include "tessera/precision/host_device.hpp"

namespace tessera {

struct Bf16 {
  std::uint16_t bits;
};
static_assert(sizeof(Bf16) == 2, "Bf16 is two bytes, as DType::kBF16");

TESSERA_HD float to_f32(float x) { return x; }
TESSERA_HD float to_f32(Bf16 x) { return bf16_to_f32(x.bits); }

template <typename T>
TESSERA_HD T from_f32(float x);
template <>
TESSERA_HD float from_f32<float>(float x) {
  return x;
}
template <>
TESSERA_HD Bf16 from_f32<Bf16>(float x) {
  return Bf16{f32_to_bf16(x)};
}

// The DType of a compute element type (float or Bf16).
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<Bf16> {
  static constexpr DType value = DType::kBF16;
};
template <typename T>
inline constexpr DType kDTypeOf = DTypeOf<T>::value;

}  // namespace tessera
