// silu_math: SiLU (x sigmoid(x), the gate of Llama's SwiGLU MLP), value and derivative, as scalar
// TESSERA_HD functions the CPU loops vectorise and CUDA kernels share:
//
//   silu(x)  = x s,                 s = 1 / (1 + e),  e = exp(-x)
//   silu'(x) = s + x s (1 - s),     1 - s = e s
//
// e through fast_expf (exp_math.hpp; its argument clamped to [-87, 88], so e stays finite and
// positive: s is ~1 above x = 87 and ~1e-38 below x = -88, where silu and silu' are 0 in f32 to
// within 1e-36). Every multiply-add is an explicit madd, so a scalar call, a vectorised loop and a
// CUDA kernel give the same bits.
#pragma once

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/exp_math.hpp"
#include "tessera/runtime/math/fma_math.hpp"

namespace tessera {

TESSERA_HD float silu_value(float x) { return x / (1.0f + fast_expf(-x)); }

TESSERA_HD float silu_derivative(float x) {
  const float e = fast_expf(-x);
  const float s = 1.0f / (1.0f + e);
  return madd(x * (e * s), s, s);  // s + x (e s) s
}

// silu(x) and silu'(x) from one exponential, the same bits as the two functions above (SwiGLU's
// backward needs both).
struct SiluParts {
  float value;
  float derivative;
};

TESSERA_HD SiluParts silu_parts(float x) {
  const float e = fast_expf(-x);
  const float s = 1.0f / (1.0f + e);
  return {x / (1.0f + e), madd(x * (e * s), s, s)};
}

}  // namespace tessera
