// CUDA RMSNorm over the last dimension (formulas in runtime/math/rmsnorm_math.hpp, the CPU's), one
// warp per row (the row's sums by warp butterflies, fixed order). Forward keeps rstd (f32).
// Backward, with xhat = x * rstd and g = weight * dout:
//   dinp = rstd * (g - xhat * mean(g * xhat));  dweight += dout * xhat
// dweight is a deterministic column sum (column_sum.cuh) queued before the row kernel, so dinp may
// alias dout, as on the CPU. T is the activations' element type, W the weight's (T, or float with
// bf16 activations).
#include "tessera/runtime/cuda/column_sum.cuh"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/rmsnorm_math.hpp"

namespace tessera::detail {
namespace {

constexpr int kRowsPerBlock = kThreads / kWarp;

template <typename T, typename W>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const W* weight, std::int64_t n,
                                       std::int64_t c, float eps) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= n) return;  // the whole warp
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + row * c;
  float sum = 0.0f;
  for (std::int64_t j = lane; j < c; j += kWarp) {
    const float v = to_f32(x[j]);
    sum += v * v;
  }
  const float rs = rmsnorm_rstd(warp_sum(sum), static_cast<float>(c), eps);
  T* o = out + row * c;
  for (std::int64_t j = lane; j < c; j += kWarp) {
    o[j] = from_f32<T>(rmsnorm_output(to_f32(x[j]), rs, to_f32(weight[j])));
  }
  if (lane == 0) rstd[row] = rs;
}

// dout * xhat at (i, j): the term of dweight.
template <typename T>
struct RmsNormGradValues {
  const T* dout;
  const T* inp;
  const float* rstd;
  std::int64_t c;
  __device__ void operator()(std::int64_t i, std::int64_t j, float (&v)[1]) const {
    v[0] = to_f32(dout[i * c + j]) * (to_f32(inp[i * c + j]) * rstd[i]);
  }
};

template <typename T, typename W>
__global__ void rmsnorm_backward_kernel(T* dinp, const T* dout, const T* inp, const W* weight, const float* rstd,
                                        std::int64_t n, std::int64_t c) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= n) return;
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + row * c;
  const T* d = dout + row * c;
  const float rs = rstd[row];
  float dot = 0.0f;
  for (std::int64_t j = lane; j < c; j += kWarp) dot += (to_f32(weight[j]) * to_f32(d[j])) * (to_f32(x[j]) * rs);
  const float mean = warp_sum(dot) * (1.0f / static_cast<float>(c));
  T* dx = dinp + row * c;
  for (std::int64_t j = lane; j < c; j += kWarp) {  // each element read, then written, by one lane
    dx[j] = from_f32<T>(rmsnorm_input_grad(to_f32(x[j]), to_f32(d[j]), to_f32(weight[j]), rs, mean));
  }
}

unsigned row_blocks(std::int64_t n) { return static_cast<unsigned>((n + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

template <typename T, typename W>
void launch_rmsnorm_forward(T* out,           // (n,c)
                            float* rstd,      // (n)
                            const T* inp,     // (n,c)
                            const W* weight,  // (c)
                            std::int64_t n, std::int64_t c, float eps, cudaStream_t stream) {
  if (n == 0) return;
  rmsnorm_forward_kernel<T, W><<<row_blocks(n), kThreads, 0, stream>>>(out, rstd, inp, weight, n, c, eps);
  TESSERA_CUDA_CHECK_LAUNCH("rmsnorm_forward_kernel");
}

template <typename T, typename W>
void launch_rmsnorm_backward(T* dinp,            // (n,c) written; may alias dout
                             W* dweight,         // (c) accumulated
                             const T* dout,      // (n,c)
                             const T* inp,       // (n,c)
                             const W* weight,    // (c)
                             const float* rstd,  // (n)
                             std::int64_t n, std::int64_t c, float* scratch, std::size_t scratch_floats,
                             cudaStream_t stream) {
  if (n == 0) return;
  column_sums<1, W>(ColumnOutputs<1, W>{{dweight}}, RmsNormGradValues<T>{dout, inp, rstd, c}, n, c, scratch,
                    scratch_floats, stream);
  rmsnorm_backward_kernel<T, W><<<row_blocks(n), kThreads, 0, stream>>>(dinp, dout, inp, weight, rstd, n, c);
  TESSERA_CUDA_CHECK_LAUNCH("rmsnorm_backward_kernel");
}

#define TESSERA_INSTANTIATE_RMSNORM(T, W)                                                                          \
  template void launch_rmsnorm_forward<T, W>(T*, float*, const T*, const W*, std::int64_t, std::int64_t, float,     \
                                             cudaStream_t);                                                         \
  template void launch_rmsnorm_backward<T, W>(T*, W*, const T*, const T*, const W*, const float*, std::int64_t,     \
                                              std::int64_t, float*, std::size_t, cudaStream_t);
TESSERA_INSTANTIATE_RMSNORM(float, float)
TESSERA_INSTANTIATE_RMSNORM(__nv_bfloat16, __nv_bfloat16)
TESSERA_INSTANTIATE_RMSNORM(__nv_bfloat16, float)
#undef TESSERA_INSTANTIATE_RMSNORM

}  // namespace tessera::detail
