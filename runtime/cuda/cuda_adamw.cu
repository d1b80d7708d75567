// CUDA AdamW: one grid-stride loop through the shared element formula (runtime/math/adamw_math.hpp)
// on the f32 master, m and v; the gradient is T, and the updated parameter can also be written as T
// into a second buffer (the bf16 copy the forward reads).
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/adamw_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void adamw_kernel(float* param, const T* grad, float* m, float* v, T* param_copy, std::int64_t n,
                             AdamWScalars s) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    float p = param[i];
    float mi = m[i];
    float vi = v[i];
    adamw_element(p, to_f32(grad[i]), mi, vi, s);
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (param_copy != nullptr) param_copy[i] = from_f32<T>(p);
  }
}

}  // namespace

template <typename T>
void launch_adamw(float* param,   // (n) updated
                  const T* grad,  // (n)
                  float* m,       // (n) updated
                  float* v,       // (n) updated
                  T* param_copy,  // (n) written, or null
                  std::int64_t n, const AdamWScalars& s, cudaStream_t stream) {
  if (n == 0) return;
  adamw_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(param, grad, m, v, param_copy, n, s);
  TESSERA_CUDA_CHECK_LAUNCH("adamw_kernel");
}

template void launch_adamw<float>(float*, const float*, float*, float*, float*, std::int64_t, const AdamWScalars&,
                                  cudaStream_t);
template void launch_adamw<__nv_bfloat16>(float*, const __nv_bfloat16*, float*, float*, __nv_bfloat16*, std::int64_t,
                                          const AdamWScalars&, cudaStream_t);

}  // namespace tessera::detail
