// The CUDA cross-entropy's row computations, shared by the whole-vocabulary kernels
// (cuda_cross_entropy.cu) and the vocabulary-sharded ones (cuda_cross_entropy_shard.cu), so a shard
// of the whole vocabulary computes the whole-vocabulary kernels' bits. One thread block per row of
// logits: the row maximum, then the sum of exp(logit - max) (exp from runtime/math/exp_math.hpp,
// block reductions in a fixed order); the backward recomputes softmax = exp(logit - lse) element by
// element, so dlogits may overwrite the logits.
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::detail {

// The log-sum-exp of the row x (v) by the whole block; every thread gets it. -inf for v = 0.
template <typename T>
__device__ float block_row_logsumexp(const T* x, std::int64_t v, float* shared) {
  float max_val = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) max_val = fmaxf(max_val, to_f32(x[j]));
  max_val = block_max(max_val, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) sum += fast_expf(to_f32(x[j]) - max_val);
  sum = block_sum(sum, shared);
  return max_val + logf(sum);
}

// dlogits (n,v) for the logits of the vocabulary columns [first, first + v): (exp(logit - lse[row])
// - [target == first + j]) * dloss; a kIgnoredTarget row 0; a row whose target is outside [0,
// vocab) NaN (no read out of range). One block per row.
template <typename T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                              const std::int32_t* targets, float dloss, std::int64_t v,
                                              std::int64_t first, std::int64_t vocab) {
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * v;
  T* d = dlogits + row * v;
  const float row_lse = lse[row];
  const std::int64_t target = targets[row];
  const bool valid = target >= 0 && target < vocab;
  const bool ignored = target == kIgnoredTarget;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) {  // each element read, then written, by one thread
    float g = fast_expf(to_f32(x[j]) - row_lse) * dloss;
    if (j == target - first) g -= dloss;
    d[j] = from_f32<T>(ignored ? 0.0f : valid ? g : NAN);
  }
}

}  // namespace tessera::detail
