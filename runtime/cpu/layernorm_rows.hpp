// The loop bodies of the CPU LayerNorm kernels — one row forward, one column block of the weight
// and bias gradients, one row of the input gradient — shared by the plain kernels
// (cpu_layernorm.cpp) and the fused residual ones (cpu_residual_layernorm.cpp), so both compute
// the same bits. T is the element type of the activations and their gradients (float or Bf16), W
// that of the weight, bias and their gradients (T, or float with Bf16 activations); statistics, sums
// and the row arithmetic are f32, and each result is rounded to its tensor's type once.
//
// Backward, per row, with xhat = (x - mean) * rstd and g = weight * dout:
//   dinp = rstd * (g - mean(g) - xhat * mean(g * xhat));  dweight += dout * xhat;  dbias += dout
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <cmath>
#include <cstdint>

#include "tessera/precision/bf16.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kLayerNormColumnBlock = 64;  // floats per column block (4 cache lines)

// o (c) = (x - mean) * rstd * weight + bias over one row x (c); writes the row's mean and rstd.
template <typename T, typename W>
inline void layernorm_forward_row(T* o, float* mean, float* rstd, const T* x, const W* weight, const W* bias,
                                  std::int64_t c, float eps) {
  const float inv_c = 1.0f / static_cast<float>(c);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < c; ++j) sum += to_f32(x[j]);
  const float mu = sum * inv_c;
  float var = 0.0f;
#pragma omp simd reduction(+ : var)
  for (std::int64_t j = 0; j < c; ++j) var += (to_f32(x[j]) - mu) * (to_f32(x[j]) - mu);
  const float rs = 1.0f / std::sqrt(var * inv_c + eps);
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) o[j] = from_f32<T>((to_f32(x[j]) - mu) * rs * to_f32(weight[j]) + to_f32(bias[j]));
  *mean = mu;
  *rstd = rs;
}

// dweight and dbias (c) += column sums over rows 0..n-1 (in row order) of dout * xhat and dout, for
// the columns [j0, j0 + width), width <= kLayerNormColumnBlock; inp and dout are (n,c).
template <typename T, typename W>
inline void layernorm_param_grads_block(W* dweight, W* dbias, const T* dout, const T* inp, const float* mean,
                                        const float* rstd, std::int64_t n, std::int64_t c, std::int64_t j0,
                                        std::int64_t width) {
  float dw[kLayerNormColumnBlock] = {};
  float db[kLayerNormColumnBlock] = {};
  for (std::int64_t i = 0; i < n; ++i) {
    const T* x = inp + i * c + j0;
    const T* d = dout + i * c + j0;
    const float mu = mean[i];
    const float rs = rstd[i];
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) {
      dw[j] += to_f32(d[j]) * ((to_f32(x[j]) - mu) * rs);
      db[j] += to_f32(d[j]);
    }
  }
  for (std::int64_t j = 0; j < width; ++j) {
    dweight[j0 + j] = from_f32<W>(to_f32(dweight[j0 + j]) + dw[j]);
    dbias[j0 + j] = from_f32<W>(to_f32(dbias[j0 + j]) + db[j]);
  }
}

// dx (c) = the input gradient of one row (dout d, input x), plus residual (c) when not null:
// dx = ln_term + residual, the same bits as the plain row followed by an add — so the term is
// stored first (rounded to T) and the residual added in a second pass over the row (in L1): in one
// expression the compiler may contract the product and the add into an FMA, which rounds
// differently. dx may alias d, not residual.
template <typename T, typename W>
inline void layernorm_backward_row(T* dx, const T* d, const T* x, const W* weight, float mu, float rs, std::int64_t c,
                                   const T* residual) {
  const float inv_c = 1.0f / static_cast<float>(c);
  float g_sum = 0.0f;
  float gx_sum = 0.0f;
#pragma omp simd reduction(+ : g_sum, gx_sum)
  for (std::int64_t j = 0; j < c; ++j) {
    const float g = to_f32(weight[j]) * to_f32(d[j]);
    g_sum += g;
    gx_sum += g * (to_f32(x[j]) - mu) * rs;
  }
  const float g_mean = g_sum * inv_c;
  const float gx_mean = gx_sum * inv_c;
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) {
    const float xhat = (to_f32(x[j]) - mu) * rs;
    dx[j] = from_f32<T>(rs * (to_f32(weight[j]) * to_f32(d[j]) - g_mean - xhat * gx_mean));
  }
  if (residual == nullptr) return;
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j) dx[j] = from_f32<T>(to_f32(dx[j]) + to_f32(residual[j]));
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
