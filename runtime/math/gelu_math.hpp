// gelu_math: GELU with the tanh approximation (GPT-2), forward value and derivative, as scalar
// TESSERA_HD functions the CPU loops vectorise and CUDA kernels share (callable per element, e.g.
// from a fused bias + GELU loop, with the bits of the Kernels entries).
//
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//
// Written through 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)), so it needs one exp and no
// tanh, and it has no cancellation for negative x (where 1 + tanh(u) loses all its digits in f32):
//
//   gelu(x)  = x s,                         s = 1 / (1 + e),  e = exp(-2u) = 2^(x t)
//   gelu'(x) = s + x s (1 - s) 2 du/dx,     1 - s = e s,  2 du/dx = 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2)
//
// with t = -2 log2(e) sqrt(2/pi) (1 + 0.044715 x^2), so e is exp2_of_product(x, t) (exp_math.hpp)
// and no separate log2(e) scaling is needed. x is clamped to [-10, 10] inside (x t stays within
// 2^+-126; beyond, gelu(x) = x and gelu'(x) = 1 in f32 for x > 10, and both are below 1e-35 in
// magnitude for x < -10); gelu(x) itself divides the unclamped x, so +-inf and NaN come out as +-inf and NaN
// (gelu' of them is that of +-10: a NaN input has made the gradient arriving here NaN already).
// Every multiply-add is an explicit madd: the loops, a scalar call and a CUDA kernel give the same
// bits. Accuracy against the tanh formula in double (tests/runtime/math/gelu_math_test.cpp):
// gelu within 1e-6 relative where |gelu(x)| >= 1e-3 or |x| < 1e-3 (6.4e-7 at worst, near x = -3.3,
// from the f32 rounding of the exponent x t), 1e-9 absolute elsewhere; gelu' within 3e-7 absolute.
#pragma once

#include <bit>
#include <cstdint>

#include "tessera/precision/float_bits.hpp"
#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/exp_math.hpp"
#include "tessera/runtime/math/fma_math.hpp"

namespace tessera {

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;
inline constexpr float kGeluClamp = 10.0f;

namespace detail {

// t = kGeluT0 + kGeluT2 x^2 = -2 log2(e) sqrt(2/pi) (1 + 0.044715 x^2): e = 2^(x t).
inline constexpr float kGeluT0 = static_cast<float>(-2.0 * 1.4426950408889634 * 0.7978845608028654);
inline constexpr float kGeluT2 = static_cast<float>(-2.0 * 1.4426950408889634 * 0.7978845608028654 * 0.044715);
// 2 du/dx = kGeluD0 + kGeluD2 x^2.
inline constexpr float kGeluD0 = static_cast<float>(2.0 * 0.7978845608028654);
inline constexpr float kGeluD2 = static_cast<float>(2.0 * 0.7978845608028654 * 3.0 * 0.044715);

// x with its magnitude clamped to kGeluClamp, on the bits: one unsigned min and the sign put back
// (no float compare, which compilers turn into several blends). NaN and inf become +-10.
TESSERA_HD float gelu_clamp(float x) {
  constexpr std::uint32_t kLimit = 0x41200000u;  // 10.0f
  const std::uint32_t bits = f32_bits(x);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  return f32_from_bits((magnitude < kLimit ? magnitude : kLimit) | (bits & 0x80000000u));
}
static_assert(std::bit_cast<float>(0x41200000u) == kGeluClamp);

}  // namespace detail

TESSERA_HD float gelu_value(float x) {
  const float xc = detail::gelu_clamp(x);
  const float x2 = xc * xc;
  const float e = exp2_of_product(xc, madd(x2, detail::kGeluT2, detail::kGeluT0));
  return x / (1.0f + e);  // 1 + e: e is a power-of-two multiple, so fusing it changes nothing
}

TESSERA_HD float gelu_derivative(float x) {
  const float xc = detail::gelu_clamp(x);
  const float x2 = xc * xc;
  const float e = exp2_of_product(xc, madd(x2, detail::kGeluT2, detail::kGeluT0));
  const float s = 1.0f / (1.0f + e);
  const float q = xc * madd(x2, detail::kGeluD2, detail::kGeluD0);  // x 2 du/dx
  return madd(q * (e * s), s, s);                                   // s + x 2du/dx (e s) s
}

}  // namespace tessera
