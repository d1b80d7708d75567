// CUDA squared error, forward and backward: one grid-stride loop each over the formula the CPU uses
// (runtime/math/squared_error_math.hpp), f32 arithmetic for every prediction type.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/squared_error_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void squared_error_forward_kernel(float* losses, const T* pred, const float* targets, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    losses[i] = squared_error_value(to_f32(pred[i]), targets[i]);
  }
}

template <typename T>
__global__ void squared_error_backward_kernel(T* dpred, const T* pred, const float* targets, float dloss,
                                              std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    dpred[i] = from_f32<T>(squared_error_gradient(to_f32(pred[i]), targets[i], dloss));
  }
}

}  // namespace

template <typename T>
void launch_squared_error_forward(float* losses,        // (n)
                                  const T* pred,        // (n)
                                  const float* targets, // (n)
                                  std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  squared_error_forward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(losses, pred, targets, n);
  TESSERA_CUDA_CHECK_LAUNCH("squared_error_forward_kernel");
}

template <typename T>
void launch_squared_error_backward(T* dpred,              // (n) written; may alias pred
                                   const T* pred,         // (n)
                                   const float* targets,  // (n)
                                   float dloss, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  squared_error_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(dpred, pred, targets, dloss, n);
  TESSERA_CUDA_CHECK_LAUNCH("squared_error_backward_kernel");
}

template void launch_squared_error_forward<float>(float*, const float*, const float*, std::int64_t, cudaStream_t);
template void launch_squared_error_forward<__nv_bfloat16>(float*, const __nv_bfloat16*, const float*, std::int64_t,
                                                          cudaStream_t);
template void launch_squared_error_backward<float>(float*, const float*, const float*, float, std::int64_t,
                                                   cudaStream_t);
template void launch_squared_error_backward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const float*, float,
                                                           std::int64_t, cudaStream_t);

}  // namespace tessera::detail
