// CUDA fused softmax + cross-entropy, one thread block per row of logits (cross_entropy_rows.cuh).
// The forward takes the row maximum, then the sum of exp(logit - max) (exp from
// runtime/math/exp_math.hpp, block reductions in a fixed order), and keeps logsumexp per row; the
// backward recomputes softmax = exp(logit - lse) element by element, so dlogits may overwrite the
// logits. A row whose target is kIgnoredTarget has loss and lse 0 and a zero gradient row.
#include <cmath>

#include "tessera/runtime/cuda/cross_entropy_rows.cuh"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/kernels.hpp"

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
  const float row_lse = block_row_logsumexp(x, v, shared);
  if (threadIdx.x == 0) {
    const std::int32_t target = targets[row];
    lse[row] = row_lse;
    losses[row] = target >= 0 && target < v ? row_lse - to_f32(x[target]) : NAN;
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
      <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(dlogits, logits, lse, targets, dloss, v, 0, v);
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
