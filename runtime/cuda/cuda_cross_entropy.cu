// CUDA fused softmax + cross-entropy, one thread block per row of logits. The forward takes the row
// maximum, then the sum of exp(logit - max) (exp from runtime/math/exp_math.hpp, block
// reductions in a fixed order), and keeps logsumexp per row; the backward recomputes
// softmax = exp(logit - lse) element by element, so dlogits may overwrite the logits. A row whose
// target is kIgnoredTarget has loss and lse 0 and a zero gradient row.
#include <cmath>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void cross_entropy_forward_kernel(float* losses, float* lse, const T* logits, const std::int32_t* targets,
                                             std::int64_t v) {
  __shared__ float shared[kWarp];
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * v;
  if (targets[row] == kIgnoredTarget) {  // the whole block leaves together: no barrier is skipped
    if (threadIdx.x == 0) lse[row] = losses[row] = 0.0f;
    return;
  }
  float max_val = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) max_val = fmaxf(max_val, to_f32(x[j]));
  max_val = block_max(max_val, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) sum += fast_expf(to_f32(x[j]) - max_val);
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) {
    const float row_lse = max_val + logf(sum);
    const std::int32_t target = targets[row];
    lse[row] = row_lse;
    losses[row] = target >= 0 && target < v ? row_lse - to_f32(x[target]) : NAN;
  }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                              const std::int32_t* targets, float dloss, std::int64_t v) {
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * v;
  T* d = dlogits + row * v;
  const float row_lse = lse[row];
  const std::int32_t target = targets[row];
  const bool valid = target >= 0 && target < v;
  const bool ignored = target == kIgnoredTarget;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) {  // each element read, then written, by one thread
    float g = fast_expf(to_f32(x[j]) - row_lse) * dloss;
    if (j == target) g -= dloss;
    d[j] = from_f32<T>(ignored ? 0.0f : valid ? g : NAN);
  }
}

}  // namespace

template <typename T>
void launch_cross_entropy_forward(float* losses,                // (n)
                                  float* lse,                   // (n)
                                  const T* logits,              // (n,v)
                                  const std::int32_t* targets,  // (n)
                                  std::int64_t n, std::int64_t v, cudaStream_t stream) {
  if (n == 0) return;
  cross_entropy_forward_kernel<T><<<static_cast<unsigned>(n), kThreads, 0, stream>>>(losses, lse, logits, targets, v);
  TESSERA_CUDA_CHECK_LAUNCH("cross_entropy_forward_kernel");
}

template <typename T>
void launch_cross_entropy_backward(T* dlogits,                   // (n,v) written; may alias logits
                                   const T* logits,              // (n,v)
                                   const float* lse,             // (n)
                                   const std::int32_t* targets,  // (n)
                                   float dloss, std::int64_t n, std::int64_t v, cudaStream_t stream) {
  if (n == 0) return;
  cross_entropy_backward_kernel<T>
      <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(dlogits, logits, lse, targets, dloss, v);
  TESSERA_CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
}

#define TESSERA_INSTANTIATE_CROSS_ENTROPY(T)                                                                           \
  template void launch_cross_entropy_forward<T>(float*, float*, const T*, const std::int32_t*, std::int64_t,           \
                                                std::int64_t, cudaStream_t);                                           \
  template void launch_cross_entropy_backward<T>(T*, const T*, const float*, const std::int32_t*, float, std::int64_t, \
                                                 std::int64_t, cudaStream_t);
TESSERA_INSTANTIATE_CROSS_ENTROPY(float)
TESSERA_INSTANTIATE_CROSS_ENTROPY(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_CROSS_ENTROPY

}  // namespace tessera::detail
