// The row loops of the CPU cross-entropy kernels, shared by the whole-vocabulary ops
// (cpu_cross_entropy.cpp) and the vocabulary-sharded ones (cpu_cross_entropy_shard.cpp), so a
// shard holding the whole vocabulary computes the whole-vocabulary op's bits.
//
// row_logsumexp reads a row once from memory: an online softmax over blocks of kBlock logits
// (small enough to stay in L1 between the block's max and its exponentials). Per block, the
// running maximum m grows to the block's maximum (the running sum is rescaled by e^(m_old - m),
// one scalar exp), then the block's e^(x - m) are summed in kLanes lanes indexed by the position
// in the block and the lanes added in order. No exponent overflows for any finite logits, and the
// order of every addition depends on v only: the same bits at any thread count and row address.
// The backward recomputes softmax = exp(logit - lse) in one pass that can overwrite the logits;
// bf16 logits are widened as they are read, each dlogit is rounded to bf16 once (the target's
// after its -dloss).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/kernel_level_namespace.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kLogitBlock = 2048;  // logits per online-softmax step (8 KiB, in L1)
inline constexpr int kLogitLanes = 16;             // partial sums per block: one 512-bit vector
static_assert(kLogitBlock % kLogitLanes == 0);

// Every target in [0, vocab) or kIgnoredTarget.
inline void check_targets(const std::int32_t* targets, std::int64_t n, std::int64_t vocab, const char* where) {
  for (std::int64_t i = 0; i < n; ++i) {
    if ((targets[i] < 0 && targets[i] != kIgnoredTarget) || targets[i] >= vocab) {
      throw_id_outside(where, "target", i, targets[i], vocab, "vocabulary");
    }
  }
}

// The largest of x (n >= 1). Max is exact, so the vector lanes' order does not matter.
template <typename T>
float logit_block_max(const T* x, std::int64_t n) {
  float m = to_f32(x[0]);
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < n; ++j) m = to_f32(x[j]) > m ? to_f32(x[j]) : m;
  return m;
}

// Sum of e^(x - m) over x (n), in kLogitLanes lanes by position (the tail's terms are added to their
// lanes after the body's), the lanes added in order. While the block is summed from L1, the next
// block is prefetched (the block max would otherwise wait for memory with the arithmetic units
// idle); a prefetch past the end of the logits is harmless.
template <typename T>
float logit_block_exp_sum(const T* x, std::int64_t n, float m) {
  float lanes[kLogitLanes] = {};
  const auto next = reinterpret_cast<std::uintptr_t>(x) + kLogitBlock * sizeof(T);
  std::int64_t j = 0;
  for (; j + kLogitLanes <= n; j += kLogitLanes) {
    __builtin_prefetch(reinterpret_cast<const void*>(next + static_cast<std::uintptr_t>(j) * sizeof(T)));
    for (int l = 0; l < kLogitLanes; ++l) lanes[l] += softmax_exp(to_f32(x[j + l]) - m);
  }
  float tail[kLogitLanes] = {};
  for (int l = 0; l < kLogitLanes && j < n; ++j, ++l) tail[l] = softmax_exp(to_f32(x[j]) - m);
  for (int l = 0; l < kLogitLanes; ++l) lanes[l] += tail[l];
  float sum = 0.0f;
  for (int l = 0; l < kLogitLanes; ++l) sum += lanes[l];
  return sum;
}

// logsumexp of row (v) in one pass over memory; -inf for v = 0 or a row of -inf logits. Blocks of
// -inf logits before the first finite one add nothing (e^-inf = 0; x - m would be NaN there).
template <typename T>
float row_logsumexp(const T* row, std::int64_t v) {
  float m = -std::numeric_limits<float>::infinity();
  double sum = 0.0;
  for (std::int64_t b = 0; b < v; b += kLogitBlock) {
    const std::int64_t len = v - b < kLogitBlock ? v - b : kLogitBlock;
    const float block_m = logit_block_max(row + b, len);
    if (block_m > m) {
      sum *= static_cast<double>(softmax_exp(m - block_m));  // 0 * e^-87 while m is -inf
      m = block_m;
    }
    if (m == -std::numeric_limits<float>::infinity()) continue;
    sum += static_cast<double>(logit_block_exp_sum(row + b, len, m));
  }
  return m + static_cast<float>(std::log(sum));
}

// The gradient rows of the logits (n,v), columns [first, first + v) of a vocabulary: dlogits =
// (exp(logit - lse[row]) - [target == first + j]) * dloss, a kIgnoredTarget row 0. A target outside
// the columns has no one-hot term here; nothing outside the row is read. dlogits may alias logits.
template <typename T>
void cross_entropy_backward_rows(T* dlogits, const T* logits, const float* lse, const std::int32_t* targets,
                                 float dloss, std::int64_t n, std::int64_t v, std::int64_t first) {
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = logits + i * v;
    T* drow = dlogits + i * v;
    if (targets[i] == kIgnoredTarget) {
      for (std::int64_t j = 0; j < v; ++j) drow[j] = from_f32<T>(0.0f);
      continue;
    }
    const std::int64_t target = static_cast<std::int64_t>(targets[i]) - first;  // its column here
    const bool here = target >= 0 && target < v;
    const float row_lse = lse[i];
    float target_term = 0.0f;  // bf16: the target's softmax term, read before the row is overwritten
    if constexpr (!std::is_same_v<T, float>) {
      if (here) target_term = softmax_exp(to_f32(row[target]) - row_lse) * dloss;
    }
#pragma omp simd
    for (std::int64_t j = 0; j < v; ++j) drow[j] = from_f32<T>(softmax_exp(to_f32(row[j]) - row_lse) * dloss);
    if (!here) continue;
    if constexpr (std::is_same_v<T, float>) {
      drow[target] -= dloss;
    } else {
      drow[target] = from_f32<T>(target_term - dloss);
    }
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail
