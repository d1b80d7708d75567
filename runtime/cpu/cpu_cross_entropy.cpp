// CPU fused softmax + cross-entropy, parallel over rows.
//
// The forward reads each row once from memory: an online softmax over blocks of kBlock logits
// (small enough to stay in L1 between the block's max and its exponentials). Per block, the
// running maximum m grows to the block's maximum (the running sum is rescaled by e^(m_old - m),
// one scalar exp), then the block's e^(x - m) are summed in kLanes lanes indexed by the position
// in the block and the lanes added in order. No exponent overflows for any finite logits, and the
// order of every addition depends on v only: the same bits at any thread count and row address.
// It keeps logsumexp per row, so the backward recomputes softmax = exp(logit - lse) in one pass
// that can overwrite the logits. bf16 logits are widened as they are read (the same block steps on
// the widened values); each dlogit is rounded to bf16 once (the target's after its -dloss). A row
// whose target is kIgnoredTarget has loss and lse 0 and a zero gradient row.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kBlock = 2048;  // logits per online-softmax step (8 KiB, in L1)
constexpr int kLanes = 16;             // partial sums per block: one 512-bit vector
static_assert(kBlock % kLanes == 0);

// Every target in [0, v) or kIgnoredTarget.
void check_targets(const std::int32_t* targets, std::int64_t n, std::int64_t v, const char* where) {
  for (std::int64_t i = 0; i < n; ++i) {
    if ((targets[i] < 0 && targets[i] != kIgnoredTarget) || targets[i] >= v) {
      throw_id_outside(where, "target", i, targets[i], v, "vocabulary");
    }
  }
}

// The largest of x (n >= 1). Max is exact, so the vector lanes' order does not matter.
template <typename T>
float block_max(const T* x, std::int64_t n) {
  float m = to_f32(x[0]);
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < n; ++j) m = to_f32(x[j]) > m ? to_f32(x[j]) : m;
  return m;
}

// Sum of e^(x - m) over x (n), in kLanes lanes by position (the tail's terms are added to their
// lanes after the body's), the lanes added in order. While the block is summed from L1, the next
// block is prefetched (block_max would otherwise wait for memory with the arithmetic units idle);
// a prefetch past the end of the logits is harmless.
template <typename T>
float block_exp_sum(const T* x, std::int64_t n, float m) {
  float lanes[kLanes] = {};
  const auto next = reinterpret_cast<std::uintptr_t>(x) + kBlock * sizeof(T);
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    __builtin_prefetch(reinterpret_cast<const void*>(next + static_cast<std::uintptr_t>(j) * sizeof(T)));
    for (int l = 0; l < kLanes; ++l) lanes[l] += softmax_exp(to_f32(x[j + l]) - m);
  }
  float tail[kLanes] = {};
  for (int l = 0; l < kLanes && j < n; ++j, ++l) tail[l] = softmax_exp(to_f32(x[j]) - m);
  for (int l = 0; l < kLanes; ++l) lanes[l] += tail[l];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// logsumexp of row (v >= 1) in one pass over memory. Blocks of -inf logits before the first finite
// one add nothing (e^-inf = 0; x - m would be NaN there).
template <typename T>
float row_logsumexp(const T* row, std::int64_t v) {
  float m = -std::numeric_limits<float>::infinity();
  double sum = 0.0;
  for (std::int64_t b = 0; b < v; b += kBlock) {
    const std::int64_t len = v - b < kBlock ? v - b : kBlock;
    const float block_m = block_max(row + b, len);
    if (block_m > m) {
      sum *= static_cast<double>(softmax_exp(m - block_m));  // 0 * e^-87 while m is -inf
      m = block_m;
    }
    if (m == -std::numeric_limits<float>::infinity()) continue;
    sum += static_cast<double>(block_exp_sum(row + b, len, m));
  }
  return m + static_cast<float>(std::log(sum));
}

template <typename T>
void cross_entropy_forward_t(float* losses,                // (n)
                             float* lse,                   // (n)
                             const T* logits,              // (n,v)
                             const std::int32_t* targets,  // (n)
                             std::int64_t n, std::int64_t v) {
  check_targets(targets, n, v, "CpuKernels::cross_entropy_forward");
  if (v < 1) return;
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    if (targets[i] == kIgnoredTarget) {
      lse[i] = 0.0f;
      losses[i] = 0.0f;
      continue;
    }
    const T* row = logits + i * v;
    const float row_lse = row_logsumexp(row, v);
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
  check_targets(targets, n, v, "CpuKernels::cross_entropy_backward");
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = logits + i * v;
    T* drow = dlogits + i * v;
    if (targets[i] == kIgnoredTarget) {
      for (std::int64_t j = 0; j < v; ++j) drow[j] = from_f32<T>(0.0f);
      continue;
    }
    const float row_lse = lse[i];
    float target_term = 0.0f;  // bf16: the target's softmax term, read before the row is overwritten
    if constexpr (!std::is_same_v<T, float>) target_term = softmax_exp(to_f32(row[targets[i]]) - row_lse) * dloss;
#pragma omp simd
    for (std::int64_t j = 0; j < v; ++j) drow[j] = from_f32<T>(softmax_exp(to_f32(row[j]) - row_lse) * dloss);
    if constexpr (std::is_same_v<T, float>) {
      drow[targets[i]] -= dloss;
    } else {
      drow[targets[i]] = from_f32<T>(target_term - dloss);
    }
  }
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

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
