// relu_math: ReLU, value and derivative, as scalar TESSERA_HD functions the CPU loops vectorise and
// CUDA kernels share:
//
//   relu(x)  = x for x > 0, else 0
//   relu'(x) = 1 for x > 0, else 0     (0 at x = 0, as PyTorch's)
//
// NaN compares false, so relu(NaN) = 0 as written; relu_value keeps NaN instead (x > 0 or x is NaN
// gives x), so a NaN reaching a ReLU is not hidden from the non-finite checks downstream.
// relu_backward_value is the product relu'(x) * dy without the multiply: dy where x > 0, else 0.
#pragma once

#include "tessera/precision/host_device.hpp"

namespace tessera {

TESSERA_HD float relu_value(float x) { return x > 0.0f || x != x ? x : 0.0f; }

TESSERA_HD float relu_backward_value(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

}  // namespace tessera
