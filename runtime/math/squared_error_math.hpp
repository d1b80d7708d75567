// squared_error_math: the squared error of one prediction and its gradient, as scalar TESSERA_HD
// functions the CPU loops and the CUDA kernels share (the same bits on both: a subtraction and
// products, nothing a compiler may contract into a fused multiply-add).
//   loss = (p - t)^2        d loss / d p = 2 (p - t), times the upstream dloss
#pragma once

#include "tessera/precision/host_device.hpp"

namespace tessera {

TESSERA_HD float squared_error_value(float pred, float target) {
  const float d = pred - target;
  return d * d;
}

TESSERA_HD float squared_error_gradient(float pred, float target, float dloss) {
  const float d = pred - target;
  return (2.0f * d) * dloss;
}

}  // namespace tessera
