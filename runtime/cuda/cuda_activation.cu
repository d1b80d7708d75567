// CUDA activation kernels: ReLU and SiLU forward/backward and the dropout mask, with the CPU's
// formulas (runtime/math/relu_math.hpp, silu_math.hpp, dropout_math.hpp). One grid-stride loop
// each, f32 arithmetic for every element type; the dropout mask is a function of the element index,
// so it is the CPU's whatever the launch shape.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/dropout_math.hpp"
#include "tessera/runtime/math/relu_math.hpp"
#include "tessera/runtime/math/silu_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void relu_forward_kernel(T* out, const T* inp, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = from_f32<T>(relu_value(to_f32(inp[i])));
}

template <typename T>
__global__ void relu_backward_kernel(T* dinp, const T* inp, const T* dout, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    dinp[i] = from_f32<T>(relu_backward_value(to_f32(inp[i]), to_f32(dout[i])));
  }
}

template <typename T>
__global__ void silu_forward_kernel(T* out, const T* inp, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = from_f32<T>(silu_value(to_f32(inp[i])));
}

template <typename T>
__global__ void silu_backward_kernel(T* dinp, const T* inp, const T* dout, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    dinp[i] = from_f32<T>(silu_derivative(to_f32(inp[i])) * to_f32(dout[i]));
  }
}

template <typename T>
__global__ void dropout_apply_kernel(T* out, const T* inp, std::int64_t n, DropoutMask mask) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride())
    out[i] = from_f32<T>(dropout_value(to_f32(inp[i]), i, mask));
}

}  // namespace

template <typename T>
void launch_relu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, inp, n);
  TESSERA_CUDA_CHECK_LAUNCH("relu_forward_kernel");
}

template <typename T>
void launch_relu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
  TESSERA_CUDA_CHECK_LAUNCH("relu_backward_kernel");
}

template <typename T>
void launch_silu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  silu_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, inp, n);
  TESSERA_CUDA_CHECK_LAUNCH("silu_forward_kernel");
}

template <typename T>
void launch_silu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  silu_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
  TESSERA_CUDA_CHECK_LAUNCH("silu_backward_kernel");
}

template <typename T>
void launch_dropout_apply(T* out, const T* inp, std::int64_t n, const DropoutMask& mask, cudaStream_t stream) {
  if (n == 0) return;
  dropout_apply_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, inp, n, mask);
  TESSERA_CUDA_CHECK_LAUNCH("dropout_apply_kernel");
}

#define TESSERA_INSTANTIATE_ACTIVATION(T)                                                    \
  template void launch_relu_forward<T>(T*, const T*, std::int64_t, cudaStream_t);            \
  template void launch_relu_backward<T>(T*, const T*, const T*, std::int64_t, cudaStream_t); \
  template void launch_silu_forward<T>(T*, const T*, std::int64_t, cudaStream_t);            \
  template void launch_silu_backward<T>(T*, const T*, const T*, std::int64_t, cudaStream_t); \
  template void launch_dropout_apply<T>(T*, const T*, std::int64_t, const DropoutMask&, cudaStream_t);
TESSERA_INSTANTIATE_ACTIVATION(float)
TESSERA_INSTANTIATE_ACTIVATION(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_ACTIVATION

}  // namespace tessera::detail
