// rmsnorm_math: the per-row formulas of RMSNorm (Llama), shared by the CPU and CUDA kernels.
//
//   forward:   rstd = 1 / sqrt(mean(x^2) + eps),   y = (x rstd) w
//   backward:  xhat = x rstd,  g = w dy,
//              dx = rstd (g - xhat mean(g xhat)),   dw += dy xhat
//
// The sums over a row are the caller's (their order is the kernel's); these are the element steps.
#pragma once

#include <cmath>

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/fma_math.hpp"

namespace tessera {

// rstd of a row of c elements whose squares sum to sum_squares.
TESSERA_HD float rmsnorm_rstd(float sum_squares, float c, float eps) { return 1.0f / sqrtf(sum_squares / c + eps); }

TESSERA_HD float rmsnorm_output(float x, float rstd, float weight) { return (x * rstd) * weight; }

// One element's input gradient; mean_g_xhat = mean over the row of (w dy) (x rstd).
TESSERA_HD float rmsnorm_input_grad(float x, float dy, float weight, float rstd, float mean_g_xhat) {
  return rstd * madd(-(x * rstd), mean_g_xhat, weight * dy);
}

}  // namespace tessera
