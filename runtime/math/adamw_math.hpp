// adamw_math: one AdamW update (decoupled weight decay) as a TESSERA_HD function, so the CPU loop
// and a CUDA kernel apply the same formula:
//
//   g = grad * grad_scale   (loss-scale division and clipping, fused: the bits of a scale pass)
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
//   p -= lr * ( (m / bc1) / (sqrt(v / bc2) + eps) + wd * p )      bc = 1 - beta^t
//
// F is float, or on the CPU a SIMD vector of floats (std::experimental::simd): the CPU loop runs
// whole vectors through the same formula, because GCC does not vectorise a scalar sqrtf loop unless
// math errno is off.
#pragma once

#include <cmath>

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

template <typename F>
TESSERA_HD void adamw_element(F& param, const F& grad, F& m, F& v, const AdamWScalars& s) {
  using std::sqrt;  // float, or found by argument-dependent lookup for SIMD vectors
  const F g = grad * s.grad_scale;
  const F m_new = s.beta1 * m + (1.0f - s.beta1) * g;
  const F v_new = s.beta2 * v + (1.0f - s.beta2) * g * g;
  const F m_hat = m_new / s.bias_correction1;
  const F v_hat = v_new / s.bias_correction2;
  param = param - s.lr * (m_hat / (sqrt(v_hat) + s.eps) + s.weight_decay * param);
  m = m_new;
  v = v_new;
}

}  // namespace tessera
