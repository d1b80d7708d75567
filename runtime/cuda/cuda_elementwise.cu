// CUDA element-wise kernels: GELU forward/backward (formula in runtime/math/gelu_math.hpp, the
// CPU's), add (also of a bf16 operand into f32) and scale. One grid-stride loop each, f32 arithmetic for every element type.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/gelu_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = from_f32<T>(gelu_value(to_f32(inp[i])));
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    dinp[i] = from_f32<T>(gelu_derivative(to_f32(inp[i])) * to_f32(dout[i]));
  }
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

__global__ void add_bf16_kernel(float* out, const float* a, const __nv_bfloat16* b, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = a[i] + to_f32(b[i]);
}

template <typename T>
__global__ void scale_kernel(T* x, float s, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) x[i] = from_f32<T>(to_f32(x[i]) * s);
}

}  // namespace

template <typename T>
void launch_gelu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, inp, n);
  TESSERA_CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

template <typename T>
void launch_gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
  TESSERA_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

template <typename T>
void launch_add(T* out, const T* a, const T* b, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, a, b, n);
  TESSERA_CUDA_CHECK_LAUNCH("add_kernel");
}

void launch_add_bf16(float* out, const float* a, const __nv_bfloat16* b, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, a, b, n);
  TESSERA_CUDA_CHECK_LAUNCH("add_bf16_kernel");
}

template <typename T>
void launch_scale(T* x, float s, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(x, s, n);
  TESSERA_CUDA_CHECK_LAUNCH("scale_kernel");
}

#define TESSERA_INSTANTIATE_ELEMENTWISE(T)                                                   \
  template void launch_gelu_forward<T>(T*, const T*, std::int64_t, cudaStream_t);            \
  template void launch_gelu_backward<T>(T*, const T*, const T*, std::int64_t, cudaStream_t); \
  template void launch_add<T>(T*, const T*, const T*, std::int64_t, cudaStream_t);           \
  template void launch_scale<T>(T*, float, std::int64_t, cudaStream_t);
TESSERA_INSTANTIATE_ELEMENTWISE(float)
TESSERA_INSTANTIATE_ELEMENTWISE(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_ELEMENTWISE

}  // namespace tessera::detail
