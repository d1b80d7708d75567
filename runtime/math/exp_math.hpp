// exp_math: branch-free single-precision exponentials in plain arithmetic (no libm call, so the
// CPU loops vectorise them), shared by the softmax, cross-entropy and GELU loops on the CPU and by
// CUDA kernels (TESSERA_HD). Every multiply-add is an explicit madd (fma_math.hpp), so a scalar
// call, a vectorised loop and a CUDA kernel give the same bits.
//
// Both split the exponent into an integer n and a fraction, build 2^n in the exponent bits and
// approximate the rest by a minimax polynomial; n comes from adding 1.5 * 2^23 + 127 (which rounds
// to an integer and leaves n + 127 in the low mantissa bits) and is exact.
//
// fast_expf(x): e^x. Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2 (ln2 in two parts, each step
// one madd), e^r by a degree-6 polynomial (minimax error 1.9e-9). Within 2 ulp of exp over the
// clamped range: inputs are clamped to [-87, 88], so very negative x give ~1.6e-38 instead of a
// subnormal or 0 and very large x give ~1.65e38 instead of inf. NaN in gives an unspecified finite
// or NaN value: callers that must propagate NaN check separately.
//
// exp2_of_product(a, b): 2^(a*b) for a*b in [-126, 126] (the caller keeps it there). n and the
// fraction f = a*b - n in [-1/2, 1/2] both come from the unrounded product (one madd each), 2^f by a
// degree-5 polynomial (minimax error 7.5e-8; within 3 ulp of 2^(a*b) with its evaluation — a
// degree below fast_expf's, as its users have larger errors of their own). For formulas whose
// exponent is a product anyway (GELU's), it is two operations shorter than fast_expf; the error of
// the caller's own factors (e.g. log2(e) rounded to f32) is the caller's to bound.
//
// softmax_exp(x): e^x for the terms of a softmax, x = logit - max <= 0 (anything up to 87 works):
// exp2_of_product(x, log2(e)) with x clamped below at -87 (so ~1.6e-38 instead of a subnormal or
// 0). Within 3 ulp near 0; the f32 log2(e) adds |x| * 1.4e-8 relative (1e-6 at -87, on terms
// below 1e-37), which moves a softmax sum by less than 1e-7. NaN stays NaN.
#pragma once

#include <cstdint>

#include "tessera/precision/float_bits.hpp"
#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/fma_math.hpp"

namespace tessera {

inline constexpr float kExpMinArg = -87.0f;
inline constexpr float kExpMaxArg = 88.0f;
inline constexpr float kLog2e = 1.44269504088896341f;

namespace detail {

// 1.5 * 2^23 + 127: x + kExpShift rounds x to an integer n and leaves n + 127 in the low mantissa
// bits, so (bits << 23) is the f32 2^n for n in [-126, 127].
inline constexpr float kExpShift = 12582912.0f + 127.0f;

TESSERA_HD float pow2_from_shifted(float shifted) { return f32_from_bits(f32_bits(shifted) << 23); }

}  // namespace detail

TESSERA_HD float fast_expf(float x) {
  constexpr float kLn2Hi = 0.693359375f;  // ln2 split so n * kLn2Hi is exact for |n| <= 128
  constexpr float kLn2Lo = -2.12194440e-4f;
  x = x < kExpMinArg ? kExpMinArg : x;
  x = x > kExpMaxArg ? kExpMaxArg : x;
  const float shifted = madd(x, kLog2e, detail::kExpShift);
  const float n = shifted - detail::kExpShift;  // exact, in [-126, 127]
  float r = madd(n, -kLn2Hi, x);
  r = madd(n, -kLn2Lo, r);
  float p = 1.3836846e-3f;  // e^r on [-ln2/2, ln2/2], relative error 1.9e-9
  p = madd(p, r, 8.3748158e-3f);
  p = madd(p, r, 4.16682256e-2f);
  p = madd(p, r, 1.66664202e-1f);
  p = madd(p, r, 4.99999921e-1f);
  p = madd(p, r, 1.00000004f);
  p = madd(p, r, 1.0f);
  return p * detail::pow2_from_shifted(shifted);  // exact: a power of two
}

TESSERA_HD float exp2_of_product(float a, float b) {
  const float shifted = madd(a, b, detail::kExpShift);
  const float n = shifted - detail::kExpShift;  // exact
  const float f = madd(a, b, -n);               // a*b - n from the unrounded product
  float p = 1.3276472e-3f;                      // 2^f on [-1/2, 1/2], relative error 7.5e-8
  p = madd(p, f, 9.67554133e-3f);
  p = madd(p, f, 5.55071327e-2f);
  p = madd(p, f, 2.40221197e-1f);
  p = madd(p, f, 6.93146967e-1f);
  p = madd(p, f, 1.00000007f);
  return p * detail::pow2_from_shifted(shifted);  // exact: a power of two
}

TESSERA_HD float softmax_exp(float x) {
  x = x < kExpMinArg ? kExpMinArg : x;  // NaN stays NaN
  return exp2_of_product(x, kLog2e);
}

}  // namespace tessera
