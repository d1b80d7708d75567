// CPU LayerNorm over the last dimension. Rows are independent (parallel over rows); the weight and
// bias gradients are column sums over rows, parallelised over column blocks with each column summed
// in row order, so they are the same bits for every thread count.
//
// Backward, per row, with xhat = (x - mean) * rstd and g = weight * dout:
//   dinp = rstd * (g - mean(g) - xhat * mean(g * xhat));  dweight += dout * xhat;  dbias += dout
// The column sums run first, so dinp may alias dout.
#include <cmath>

#include "runtime/cpu/cpu_kernels.hpp"

namespace tessera {
namespace {
constexpr std::int64_t kColumnBlock = 64;  // floats per column block (4 cache lines)
}

void CpuKernels::layernorm_forward(float* out,           // (n,c)
                                   float* mean,          // (n)
                                   float* rstd,          // (n)
                                   const float* inp,     // (n,c)
                                   const float* weight,  // (c)
                                   const float* bias,    // (c)
                                   std::int64_t n, std::int64_t c, float eps) const {
  const float inv_c = 1.0f / static_cast<float>(c);
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = inp + i * c;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < c; ++j) sum += x[j];
    const float mu = sum * inv_c;
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (std::int64_t j = 0; j < c; ++j) var += (x[j] - mu) * (x[j] - mu);
    const float rs = 1.0f / std::sqrt(var * inv_c + eps);
    float* o = out + i * c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) o[j] = (x[j] - mu) * rs * weight[j] + bias[j];
    mean[i] = mu;
    rstd[i] = rs;
  }
}

void CpuKernels::layernorm_backward(float* dinp,          // (n,c) written
                                    float* dweight,       // (c) accumulated
                                    float* dbias,         // (c) accumulated
                                    const float* dout,    // (n,c)
                                    const float* inp,     // (n,c)
                                    const float* weight,  // (c)
                                    const float* mean,    // (n)
                                    const float* rstd,    // (n)
                                    std::int64_t n, std::int64_t c) const {
  // Column sums (dweight, dbias) first: dout is still intact when dinp overwrites it.
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    float dw[kColumnBlock] = {};
    float db[kColumnBlock] = {};
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

  const float inv_c = 1.0f / static_cast<float>(c);
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = inp + i * c;
    const float* d = dout + i * c;
    const float mu = mean[i];
    const float rs = rstd[i];
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
    float* dx = dinp + i * c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) {
      const float xhat = (x[j] - mu) * rs;
      dx[j] = rs * (weight[j] * d[j] - g_mean - xhat * gx_mean);
    }
  }
}

}  // namespace tessera
