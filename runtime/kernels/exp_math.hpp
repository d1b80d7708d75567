// exp_math: a branch-free single-precision exp that compilers vectorise (no libm call), shared by
// the softmax, cross-entropy and GELU loops on the CPU and by CUDA kernels (TESSERA_HD).
//
// fast_expf(x): Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, a degree-6 minimax
// polynomial for e^r (the Cephes expf coefficients) and 2^n built in the exponent bits. Error within
// about 2 ulp of exp over the clamped range; inputs are clamped to [-87, 88], so very negative x
// give ~1.6e-38 instead of a subnormal or 0 and very large x give ~1.65e38 instead of inf.
// NaN in gives an unspecified finite or NaN value: callers that must propagate NaN check separately.
#pragma once

#include <cstdint>

#include "precision/float_bits.hpp"
#include "precision/host_device.hpp"

namespace tessera {

inline constexpr float kExpMinArg = -87.0f;
inline constexpr float kExpMaxArg = 88.0f;

TESSERA_HD float fast_expf(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln2 split so n * kLn2Hi is exact for |n| <= 128
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = x < kExpMinArg ? kExpMinArg : x;
  x = x > kExpMaxArg ? kExpMaxArg : x;
  const float n = (x * kLog2e + kRoundMagic) - kRoundMagic;  // round to nearest, n in [-126, 127]
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t e = static_cast<std::int32_t>(n) + 127;
  return p * f32_from_bits(static_cast<std::uint32_t>(e) << 23);
}

}  // namespace tessera
