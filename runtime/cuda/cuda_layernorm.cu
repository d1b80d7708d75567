// CUDA LayerNorm over the last dimension, one warp per row (the row's sums by warp butterflies,
// fixed order). Forward keeps mean and rstd (f32). Backward, with xhat = (x - mean) * rstd and
// g = weight * dout:
//   dinp = rstd * (g - mean(g) - xhat * mean(g * xhat));  dweight += dout * xhat;  dbias += dout
// dweight and dbias are deterministic column sums (column_sum.cuh) queued before the row kernel,
// so dinp may alias dout, as on the CPU.
// The residual variants run the same kernels with the residual add inside: forward writes sum = a + b
// (rounded to T, as add would) and normalises it; backward adds dresidual to dinp after rounding the
// LayerNorm gradient to T (as layernorm_backward then add would). T is the activations' element type,
// W the weight's and bias's (T, or float with bf16 activations).
#include "tessera/runtime/cuda/column_sum.cuh"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera::detail {
namespace {

constexpr int kRowsPerBlock = kThreads / kWarp;

template <typename T, typename W, bool kResidual>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, T* sum_out, const T* inp, const T* other,
                                         const W* weight, const W* bias, std::int64_t n, std::int64_t c, float eps) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= n) return;  // the whole warp
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + row * c;
  if constexpr (kResidual) {  // x = a + b, written by the lane that reads it back below
    const T* y = other + row * c;
    T* s = sum_out + row * c;
    for (std::int64_t j = lane; j < c; j += kWarp) s[j] = from_f32<T>(to_f32(x[j]) + to_f32(y[j]));
    x = s;
  }
  const float inv_c = 1.0f / static_cast<float>(c);
  float sum = 0.0f;
  for (std::int64_t j = lane; j < c; j += kWarp) sum += to_f32(x[j]);
  const float mu = warp_sum(sum) * inv_c;
  float var = 0.0f;
  for (std::int64_t j = lane; j < c; j += kWarp) {
    const float d = to_f32(x[j]) - mu;
    var += d * d;
  }
  const float rs = 1.0f / sqrtf(warp_sum(var) * inv_c + eps);
  T* o = out + row * c;
  for (std::int64_t j = lane; j < c; j += kWarp) {
    o[j] = from_f32<T>((to_f32(x[j]) - mu) * rs * to_f32(weight[j]) + to_f32(bias[j]));
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// (dout * xhat, dout) at (i, j): the terms of dweight and dbias.
template <typename T>
struct NormGradValues {
  const T* dout;
  const T* inp;
  const float* mean;
  const float* rstd;
  std::int64_t c;
  __device__ void operator()(std::int64_t i, std::int64_t j, float (&v)[2]) const {
    const float d = to_f32(dout[i * c + j]);
    v[0] = d * ((to_f32(inp[i * c + j]) - mean[i]) * rstd[i]);
    v[1] = d;
  }
};

template <typename T, typename W>
__global__ void layernorm_backward_kernel(T* dinp, const T* dout, const T* dresidual, const T* inp, const W* weight,
                                          const float* mean, const float* rstd, std::int64_t n, std::int64_t c) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= n) return;
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + row * c;
  const T* d = dout + row * c;
  const float mu = mean[row];
  const float rs = rstd[row];
  float g_sum = 0.0f;
  float gx_sum = 0.0f;
  for (std::int64_t j = lane; j < c; j += kWarp) {
    const float g = to_f32(weight[j]) * to_f32(d[j]);
    g_sum += g;
    gx_sum += g * (to_f32(x[j]) - mu) * rs;
  }
  const float inv_c = 1.0f / static_cast<float>(c);
  const float g_mean = warp_sum(g_sum) * inv_c;
  const float gx_mean = warp_sum(gx_sum) * inv_c;
  T* dx = dinp + row * c;
  for (std::int64_t j = lane; j < c; j += kWarp) {  // each element read, then written, by one lane
    const float xhat = (to_f32(x[j]) - mu) * rs;
    const T g = from_f32<T>(rs * (to_f32(weight[j]) * to_f32(d[j]) - g_mean - xhat * gx_mean));
    dx[j] = dresidual == nullptr ? g : from_f32<T>(to_f32(dresidual[row * c + j]) + to_f32(g));
  }
}

unsigned row_blocks(std::int64_t n) { return static_cast<unsigned>((n + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

std::size_t column_sum_scratch_floats(std::int64_t n, std::int64_t c, int outputs) {
  std::int64_t groups = (n + kRowsPerGroup - 1) / kRowsPerGroup;
  groups = groups < kMaxRowGroups ? groups : kMaxRowGroups;
  groups = groups > 1 ? groups : 1;
  return static_cast<std::size_t>(groups * c * outputs);
}

template <typename T, typename W>
void launch_layernorm_forward(T* out,           // (n,c)
                              float* mean,      // (n)
                              float* rstd,      // (n)
                              const T* inp,     // (n,c)
                              const W* weight,  // (c)
                              const W* bias,    // (c)
                              std::int64_t n, std::int64_t c, float eps, cudaStream_t stream) {
  if (n == 0) return;
  layernorm_forward_kernel<T, W, false>
      <<<row_blocks(n), kThreads, 0, stream>>>(out, mean, rstd, nullptr, inp, nullptr, weight, bias, n, c, eps);
  TESSERA_CUDA_CHECK_LAUNCH("layernorm_forward_kernel");
}

template <typename T, typename W>
void launch_residual_layernorm_forward(T* sum,           // (n,c) = a + b
                                       T* out,           // (n,c)
                                       float* mean,      // (n)
                                       float* rstd,      // (n)
                                       const T* a,       // (n,c)
                                       const T* b,       // (n,c)
                                       const W* weight,  // (c)
                                       const W* bias,    // (c)
                                       std::int64_t n, std::int64_t c, float eps, cudaStream_t stream) {
  if (n == 0) return;
  layernorm_forward_kernel<T, W, true>
      <<<row_blocks(n), kThreads, 0, stream>>>(out, mean, rstd, sum, a, b, weight, bias, n, c, eps);
  TESSERA_CUDA_CHECK_LAUNCH("residual_layernorm_forward_kernel");
}

template <typename T, typename W>
void launch_residual_layernorm_backward(T* dinp,             // (n,c) written; may alias dout, not dresidual
                                        W* dweight,          // (c) accumulated
                                        W* dbias,            // (c) accumulated
                                        const T* dout,       // (n,c)
                                        const T* dresidual,  // (n,c) added to dinp, or null
                                        const T* inp,        // (n,c)
                                        const W* weight,     // (c)
                                        const float* mean,   // (n)
                                        const float* rstd,   // (n)
                                        std::int64_t n, std::int64_t c, float* scratch, std::size_t scratch_floats,
                                        cudaStream_t stream) {
  if (n == 0) return;
  column_sums<2, W>(ColumnOutputs<2, W>{{dweight, dbias}}, NormGradValues<T>{dout, inp, mean, rstd, c}, n, c, scratch,
                    scratch_floats, stream);
  layernorm_backward_kernel<T, W>
      <<<row_blocks(n), kThreads, 0, stream>>>(dinp, dout, dresidual, inp, weight, mean, rstd, n, c);
  TESSERA_CUDA_CHECK_LAUNCH("layernorm_backward_kernel");
}

template <typename T, typename W>
void launch_layernorm_backward(T* dinp,            // (n,c) written; may alias dout
                               W* dweight,         // (c) accumulated
                               W* dbias,           // (c) accumulated
                               const T* dout,      // (n,c)
                               const T* inp,       // (n,c)
                               const W* weight,    // (c)
                               const float* mean,  // (n)
                               const float* rstd,  // (n)
                               std::int64_t n, std::int64_t c, float* scratch, std::size_t scratch_floats,
                               cudaStream_t stream) {
  launch_residual_layernorm_backward<T, W>(dinp, dweight, dbias, dout, nullptr, inp, weight, mean, rstd, n, c, scratch,
                                        scratch_floats, stream);
}

#define TESSERA_INSTANTIATE_LAYERNORM(T, W)                                                                          \
  template void launch_layernorm_forward<T, W>(T*, float*, float*, const T*, const W*, const W*, std::int64_t,        \
                                               std::int64_t, float, cudaStream_t);                                    \
  template void launch_layernorm_backward<T, W>(T*, W*, W*, const T*, const T*, const W*, const float*, const float*, \
                                                std::int64_t, std::int64_t, float*, std::size_t, cudaStream_t);       \
  template void launch_residual_layernorm_forward<T, W>(T*, T*, float*, float*, const T*, const T*, const W*,         \
                                                        const W*, std::int64_t, std::int64_t, float, cudaStream_t);   \
  template void launch_residual_layernorm_backward<T, W>(T*, W*, W*, const T*, const T*, const T*, const W*,          \
                                                         const float*, const float*, std::int64_t, std::int64_t,      \
                                                         float*, std::size_t, cudaStream_t);
TESSERA_INSTANTIATE_LAYERNORM(float, float)
TESSERA_INSTANTIATE_LAYERNORM(__nv_bfloat16, __nv_bfloat16)
TESSERA_INSTANTIATE_LAYERNORM(__nv_bfloat16, float)
#undef TESSERA_INSTANTIATE_LAYERNORM

}  // namespace tessera::detail
