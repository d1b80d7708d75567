// CPU vocabulary-sharded cross-entropy (tensor parallelism): a rank holds the logits of the columns
// [first, first + v) of the vocabulary. Forward: per row, the log-sum-exp of the local logits (the
// whole-vocabulary kernel's row_logsumexp, cross_entropy_rows.hpp, so a shard of the whole
// vocabulary gives its bits) and the target's logit when the target is local. Combine: the
// shards' lse parts into the row's lse (runtime/math/lse_combine_math.hpp) and the loss. Backward:
// the whole-vocabulary kernel's row loop with the columns offset by first, against the global lse.
// kIgnoredTarget rows: lse, target logit, loss and gradient 0.
#include "tessera/runtime/cpu/cross_entropy_rows.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/lse_combine_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

template <typename T>
void cross_entropy_shard_forward_t(float* lse,                   // (n)
                                   float* target_logit,          // (n)
                                   const T* logits,              // (n,v): columns [first, first + v)
                                   const std::int32_t* targets,  // (n) in [0, vocab) or kIgnoredTarget
                                   std::int64_t n, std::int64_t v, std::int64_t first, std::int64_t vocab) {
  check_vocab_shard("CpuKernels::cross_entropy_shard_forward", first, v, vocab);
  detail::check_targets(targets, n, vocab, "CpuKernels::cross_entropy_shard_forward");
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    if (targets[i] == kIgnoredTarget) {
      lse[i] = 0.0f;
      target_logit[i] = 0.0f;
      continue;
    }
    const T* row = logits + i * v;
    const std::int64_t target = static_cast<std::int64_t>(targets[i]) - first;  // its column here
    lse[i] = detail::row_logsumexp(row, v);
    target_logit[i] = target >= 0 && target < v ? to_f32(row[target]) : 0.0f;
  }
}

template <typename T>
void cross_entropy_shard_backward_t(T* dlogits,                   // (n,v) written; may alias logits
                                    const T* logits,              // (n,v): columns [first, first + v)
                                    const float* lse,             // (n) the global lse
                                    const std::int32_t* targets,  // (n)
                                    float dloss, std::int64_t n, std::int64_t v, std::int64_t first) {
  detail::cross_entropy_backward_rows(dlogits, logits, lse, targets, dloss, n, v, first);
}

}  // namespace

void LevelKernels::cross_entropy_shard_forward(float* lse, float* target_logit, const float* logits,
                                               const std::int32_t* targets, std::int64_t n, std::int64_t v,
                                               std::int64_t first, std::int64_t vocab) const {
  cross_entropy_shard_forward_t(lse, target_logit, logits, targets, n, v, first, vocab);
}
void LevelKernels::cross_entropy_shard_forward(float* lse, float* target_logit, const Bf16* logits,
                                               const std::int32_t* targets, std::int64_t n, std::int64_t v,
                                               std::int64_t first, std::int64_t vocab) const {
  cross_entropy_shard_forward_t(lse, target_logit, logits, targets, n, v, first, vocab);
}
void LevelKernels::cross_entropy_shard_backward(float* dlogits, const float* logits, const float* lse,
                                                const std::int32_t* targets, float dloss, std::int64_t n,
                                                std::int64_t v, std::int64_t first) const {
  cross_entropy_shard_backward_t(dlogits, logits, lse, targets, dloss, n, v, first);
}
void LevelKernels::cross_entropy_shard_backward(Bf16* dlogits, const Bf16* logits, const float* lse,
                                                const std::int32_t* targets, float dloss, std::int64_t n,
                                                std::int64_t v, std::int64_t first) const {
  cross_entropy_shard_backward_t(dlogits, logits, lse, targets, dloss, n, v, first);
}

// losses (n), lse (n) from lse_parts (parts,n) and target_logit (n).
void LevelKernels::cross_entropy_shard_combine(float* losses, float* lse, const float* lse_parts,
                                               const float* target_logit, const std::int32_t* targets, std::int64_t n,
                                               std::int64_t parts) const {
  if (parts < 1) throw_no_lse_parts("CpuKernels::cross_entropy_shard_combine", parts);
#pragma omp parallel for schedule(static) if (n * parts > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    if (targets[i] == kIgnoredTarget) {
      lse[i] = 0.0f;
      losses[i] = 0.0f;
      continue;
    }
    const float row_lse = combine_log_sum_exp(lse_parts + i, n, parts);
    lse[i] = row_lse;
    losses[i] = row_lse - target_logit[i];
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
