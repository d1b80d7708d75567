// CPU fused softmax + cross-entropy over the whole vocabulary, parallel over rows: each row's
// log-sum-exp by cross_entropy_rows.hpp's one-pass online softmax, kept for the backward, which
// recomputes softmax = exp(logit - lse) in one pass that can overwrite the logits. bf16 logits are
// widened as they are read; each dlogit is rounded to bf16 once. A row whose target is
// kIgnoredTarget has loss and lse 0 and a zero gradient row.
#include "tessera/runtime/cpu/cross_entropy_rows.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

template <typename T>
void cross_entropy_forward_t(float* losses,                // (n)
                             float* lse,                   // (n)
                             const T* logits,              // (n,v)
                             const std::int32_t* targets,  // (n)
                             std::int64_t n, std::int64_t v) {
  detail::check_targets(targets, n, v, "CpuKernels::cross_entropy_forward");
  if (v < 1) return;
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    if (targets[i] == kIgnoredTarget) {
      lse[i] = 0.0f;
      losses[i] = 0.0f;
      continue;
    }
    const T* row = logits + i * v;
    const float row_lse = detail::row_logsumexp(row, v);
    lse[i] = row_lse;
    losses[i] = row_lse - to_f32(row[targets[i]]);
  }
}

template <typename T>
void cross_entropy_backward_t(T* dlogits,                   // (n,v) written; may alias logits
                              const T* logits,              // (n,v)
                              const float* lse,             // (n)
                              const std::int32_t* targets,  // (n)
                              float dloss, std::int64_t n, std::int64_t v) {
  detail::check_targets(targets, n, v, "CpuKernels::cross_entropy_backward");
  detail::cross_entropy_backward_rows(dlogits, logits, lse, targets, dloss, n, v, 0);
}

}  // namespace

void LevelKernels::cross_entropy_forward(float* losses, float* lse, const float* logits, const std::int32_t* targets,
                                         std::int64_t n, std::int64_t v) const {
  cross_entropy_forward_t(losses, lse, logits, targets, n, v);
}
void LevelKernels::cross_entropy_forward(float* losses, float* lse, const Bf16* logits, const std::int32_t* targets,
                                         std::int64_t n, std::int64_t v) const {
  cross_entropy_forward_t(losses, lse, logits, targets, n, v);
}
void LevelKernels::cross_entropy_backward(float* dlogits, const float* logits, const float* lse,
                                          const std::int32_t* targets, float dloss, std::int64_t n,
                                          std::int64_t v) const {
  cross_entropy_backward_t(dlogits, logits, lse, targets, dloss, n, v);
}
void LevelKernels::cross_entropy_backward(Bf16* dlogits, const Bf16* logits, const float* lse,
                                          const std::int32_t* targets, float dloss, std::int64_t n,
                                          std::int64_t v) const {
  cross_entropy_backward_t(dlogits, logits, lse, targets, dloss, n, v);
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
