// The loop bodies of the CPU LayerNorm kernels — one row forward, one column block of the weight
// and bias gradients, one row of the input gradient — shared by the plain kernels
// (cpu_layernorm.cpp) and the fused residual ones (cpu_residual_layernorm.cpp), so both compute
// the same bits.
//
// Backward, per row, with xhat = (x - mean) * rstd and g = weight * dout:
//   dinp = rstd * (g - mean(g) - xhat * mean(g * xhat));  dweight += dout * xhat;  dbias += dout
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <cmath>
#include <cstdint>

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kLayerNormColumnBlock = 64;  // floats per column block (4 cache lines)

// o (c) = (x - mean) * rstd * weight + bias over one row x (c); writes the row's mean and rstd.
inline void layernorm_forward_row(float* o, float* mean, float* rstd, const float* x, const float* weight,
                                  const float* bias, std::int64_t c, float eps) {
  const float inv_c = 1.0f / static_cast<float>(c);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < c; ++j) sum += x[j];
  const float mu = sum * inv_c;
  float var = 0.0f;
#pragma omp simd reduction(+ : var)
  for (std::int64_t j = 0; j < c; ++j) var += (x[j] - mu) * (x[j] - mu);
  const float rs = 1.0f / std::sqrt(var * inv_c + eps);
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) o[j] = (x[j] - mu) * rs * weight[j] + bias[j];
  *mean = mu;
  *rstd = rs;
}

// dweight and dbias (c) += column sums over rows 0..n-1 (in row order) of dout * xhat and dout, for
// the columns [j0, j0 + width), width <= kLayerNormColumnBlock; inp and dout are (n,c).
inline void layernorm_param_grads_block(float* dweight, float* dbias, const float* dout, const float* inp,
                                        const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                                        std::int64_t j0, std::int64_t width) {
  float dw[kLayerNormColumnBlock] = {};
  float db[kLayerNormColumnBlock] = {};
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = inp + i * c + j0;
    const float* d = dout + i * c + j0;
    const float mu = mean[i];
    const float rs = rstd[i];
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) {
      dw[j] += d[j] * ((x[j] - mu) * rs);
      db[j] += d[j];
    }
  }
  for (std::int64_t j = 0; j < width; ++j) {
    dweight[j0 + j] += dw[j];
    dbias[j0 + j] += db[j];
  }
}

// dx (c) = the input gradient of one row (dout d, input x), plus residual (c) when not null:
// dx = ln_term + residual, the same bits as the plain row followed by an add — so the term is
// stored first and the residual added in a second pass over the row (in L1): in one expression
// the compiler may contract the product and the add into an FMA, which rounds differently. dx may
// alias d, not residual.
inline void layernorm_backward_row(float* dx, const float* d, const float* x, const float* weight, float mu, float rs,
                                   std::int64_t c, const float* residual) {
  const float inv_c = 1.0f / static_cast<float>(c);
  float g_sum = 0.0f;
  float gx_sum = 0.0f;
#pragma omp simd reduction(+ : g_sum, gx_sum)
  for (std::int64_t j = 0; j < c; ++j) {
    const float g = weight[j] * d[j];
    g_sum += g;
    gx_sum += g * (x[j] - mu) * rs;
  }
  const float g_mean = g_sum * inv_c;
  const float gx_mean = gx_sum * inv_c;
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) {
    const float xhat = (x[j] - mu) * rs;
    dx[j] = rs * (weight[j] * d[j] - g_mean - xhat * gx_mean);
  }
  if (residual == nullptr) return;
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) dx[j] += residual[j];
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
