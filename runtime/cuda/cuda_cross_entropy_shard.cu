// CUDA vocabulary-sharded cross-entropy (tensor parallelism): a rank holds the logits of the
// vocabulary columns [first, first + v). Forward: one block per row, the local logits' log-sum-exp
// as the whole-vocabulary kernel computes it (cross_entropy_rows.cuh) and the target's logit when
// the target is local. Combine: one thread per row, the shards' lse parts into the row's lse
// (runtime/math/lse_combine_math.hpp, the CPU's formula) and the loss. Backward: the
// whole-vocabulary kernel with the columns offset by first, against the global lse. kIgnoredTarget
// rows: lse, target logit, loss and gradient 0. A target outside [0, vocab) reads nothing out of
// range: its target logit is NaN, hence its loss; the backward, not told the vocabulary, makes a
// negative one's row NaN.
#include <cmath>
#include <limits>

#include "tessera/runtime/cuda/cross_entropy_rows.cuh"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/lse_combine_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void cross_entropy_shard_forward_kernel(float* lse, float* target_logit, const T* logits,
                                                   const std::int32_t* targets, std::int64_t v, std::int64_t first,
                                                   std::int64_t vocab) {
  __shared__ float shared[kWarp];
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * v;
  if (targets[row] == kIgnoredTarget) {  // the whole block leaves together: no barrier is skipped
    if (threadIdx.x == 0) lse[row] = target_logit[row] = 0.0f;
    return;
  }
  const float row_lse = block_row_logsumexp(x, v, shared);
  if (threadIdx.x == 0) {
    const std::int64_t target = targets[row];
    const std::int64_t local = target - first;  // the target's column here
    lse[row] = row_lse;
    target_logit[row] = !(target >= 0 && target < vocab) ? NAN : local >= 0 && local < v ? to_f32(x[local]) : 0.0f;
  }
}

__global__ void cross_entropy_shard_combine_kernel(float* losses, float* lse, const float* lse_parts,
                                                   const float* target_logit, const std::int32_t* targets,
                                                   std::int64_t n, std::int64_t parts) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    if (targets[i] == kIgnoredTarget) {
      lse[i] = losses[i] = 0.0f;
      continue;
    }
    const float row_lse = combine_log_sum_exp(lse_parts + i, n, parts);
    lse[i] = row_lse;
    losses[i] = row_lse - target_logit[i];
  }
}

}  // namespace

template <typename T>
void launch_cross_entropy_shard_forward(float* lse,                   // (n)
                                        float* target_logit,          // (n)
                                        const T* logits,              // (n,v): columns [first, first + v)
                                        const std::int32_t* targets,  // (n)
                                        std::int64_t n, std::int64_t v, std::int64_t first, std::int64_t vocab,
                                        cudaStream_t stream) {
  if (n == 0) return;
  cross_entropy_shard_forward_kernel<T>
      <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(lse, target_logit, logits, targets, v, first, vocab);
  TESSERA_CUDA_CHECK_LAUNCH("cross_entropy_shard_forward_kernel");
}

void launch_cross_entropy_shard_combine(float* losses,                // (n)
                                        float* lse,                   // (n)
                                        const float* lse_parts,       // (parts,n)
                                        const float* target_logit,    // (n)
                                        const std::int32_t* targets,  // (n)
                                        std::int64_t n, std::int64_t parts, cudaStream_t stream) {
  if (n == 0) return;
  cross_entropy_shard_combine_kernel<<<grid_for(n), kThreads, 0, stream>>>(losses, lse, lse_parts, target_logit,
                                                                           targets, n, parts);
  TESSERA_CUDA_CHECK_LAUNCH("cross_entropy_shard_combine_kernel");
}

template <typename T>
void launch_cross_entropy_shard_backward(T* dlogits,                   // (n,v) written; may alias logits
                                         const T* logits,              // (n,v): columns [first, first + v)
                                         const float* lse,             // (n) the global lse
                                         const std::int32_t* targets,  // (n)
                                         float dloss, std::int64_t n, std::int64_t v, std::int64_t first,
                                         cudaStream_t stream) {
  if (n == 0) return;
  constexpr std::int64_t kAnyVocab = std::numeric_limits<std::int64_t>::max();  // only negative targets are NaN
  cross_entropy_backward_kernel<T>
      <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(dlogits, logits, lse, targets, dloss, v, first, kAnyVocab);
  TESSERA_CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
}

#define TESSERA_INSTANTIATE_CROSS_ENTROPY_SHARD(T)                                                                 \
  template void launch_cross_entropy_shard_forward<T>(float*, float*, const T*, const std::int32_t*, std::int64_t, \
                                                      std::int64_t, std::int64_t, std::int64_t, cudaStream_t);     \
  template void launch_cross_entropy_shard_backward<T>(T*, const T*, const float*, const std::int32_t*, float,     \
                                                       std::int64_t, std::int64_t, std::int64_t, cudaStream_t);
TESSERA_INSTANTIATE_CROSS_ENTROPY_SHARD(float)
TESSERA_INSTANTIATE_CROSS_ENTROPY_SHARD(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_CROSS_ENTROPY_SHARD

}  // namespace tessera::detail
