// gelu_math: GELU with the tanh approximation (GPT-2), forward value and derivative, as scalar
// TESSERA_HD functions the CPU loops vectorise and CUDA kernels share.
//
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//
// Written through 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)), so it needs one exp and no
// tanh, and it has no cancellation for negative x (where 1 + tanh(u) loses all its digits in f32):
//
//   gelu(x)  = x s,                         s = 1 / (1 + e),  e = exp(-2u)
//   gelu'(x) = s + x s (1 - s) 2 du/dx,     1 - s = e s,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
#pragma once

#include "precision/host_device.hpp"
#include "runtime/kernels/exp_math.hpp"

namespace tessera {

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;

TESSERA_HD float gelu_value(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float e = fast_expf(-2.0f * u);
  return x / (1.0f + e);
}

TESSERA_HD float gelu_derivative(float x) {
  const float x2 = x * x;
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x2 * x);
  const float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x2);
  const float e = fast_expf(-2.0f * u);
  const float s = 1.0f / (1.0f + e);
  return s + 2.0f * x * du * (e * s) * s;
}

}  // namespace tessera
