// The CPU embedding kernels over a range of vocabulary rows, shared by the whole-table ops
// (cpu_embedding.cpp: the range is the whole table) and the vocabulary-sharded ones
// (cpu_embedding_shard.cpp: the rows [first, first + rows) a tensor-parallel rank holds), so a shard
// of the whole vocabulary computes the whole-table op's bits.
//
// Forward copies rows in parallel over positions; a token outside the range contributes a zero row,
// so the output is the position row itself. Backward is a scatter-add: it is parallelised over
// column blocks (never over tokens), and within a block rows are added in (b,t) order, so repeated
// tokens accumulate in the same order for every thread count; tokens outside the range are skipped.
// In bf16 the rows of a token are summed in f32 first and added to its gradient row once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kEmbeddingColumnBlock = 64;  // floats per column block (4 cache lines)

// The vocabulary rows [first, first + rows) one table holds.
struct VocabRange {
  std::int64_t first = 0;
  std::int64_t rows = 0;
  bool holds(std::int32_t token) const { return token >= first && token - first < rows; }
};

// A range that is not inside [0, vocab) names rows no table of the vocabulary holds: refuse it.
inline void check_vocab_range(VocabRange range, std::int64_t vocab, const char* where) {
  check_vocab_shard(where, range.first, range.rows, vocab);
}

// A token outside [0, vocab) would read (forward) or write (backward) past the table it names:
// refuse the whole call, naming the first such token.
inline void check_embedding_tokens(const std::int32_t* tokens, std::int64_t n, std::int64_t vocab, const char* where) {
  std::int32_t lo = 0, hi = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi)
  for (std::int64_t i = 0; i < n; ++i) {
    lo = tokens[i] < lo ? tokens[i] : lo;
    hi = tokens[i] > hi ? tokens[i] : hi;
  }
  if (lo >= 0 && hi < vocab) return;
  for (std::int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) throw_id_outside(where, "token", i, tokens[i], vocab, "embedding table");
  }
}

// out (b,t,c) = wte[tok - range.first] (range.rows,c) for a token in the range, else 0, plus wpe[t]
// (maxT,c) when wpe is not null. Tokens (b,t) already checked.
template <typename T>
void embedding_range_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, std::int64_t b,
                             std::int64_t t, std::int64_t c, VocabRange range) {
  const std::int64_t n = b * t;
#pragma omp parallel for schedule(static) if (n * c > (1 << 15))
  for (std::int64_t r = 0; r < n; ++r) {
    T* o = out + r * c;
    const T* pos_row = wpe == nullptr ? nullptr : wpe + (r % t) * c;
    if (!range.holds(tokens[r])) {  // a zero row: the position row exactly, or zeros
      if (pos_row != nullptr) {
        std::copy(pos_row, pos_row + c, o);
      } else {
        std::fill(o, o + c, from_f32<T>(0.0f));
      }
      continue;
    }
    const T* tok_row = wte + (static_cast<std::int64_t>(tokens[r]) - range.first) * c;
    if (pos_row == nullptr) {
      std::copy(tok_row, tok_row + c, o);
      continue;
    }
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) o[j] = from_f32<T>(to_f32(tok_row[j]) + to_f32(pos_row[j]));
  }
}

// dwpe[ti] (columns [j0, j0 + width)) += the sum over the batch of dout's rows at position ti, in
// batch order, for every position.
template <typename T>
void position_grads_block(T* dwpe, const T* dout, std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t j0,
                          std::int64_t width) {
  for (std::int64_t ti = 0; ti < t; ++ti) {
    float acc[kEmbeddingColumnBlock] = {};
    for (std::int64_t bi = 0; bi < b; ++bi) {
      const T* d = dout + (bi * t + ti) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += to_f32(d[j]);
    }
    T* dst = dwpe + ti * c + j0;
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) dst[j] = from_f32<T>(to_f32(dst[j]) + acc[j]);
  }
}

// The rows of a batch whose token lies in the range, grouped by token, each group in (b,t) order (a
// stable counting sort): the rows of one token are order[starts[g] .. starts[g + 1]),
// tokens[order[starts[g]]] its token.
struct TokenGroups {
  std::vector<std::int32_t> order;
  std::vector<std::int64_t> starts;
};

inline void group_rows_by_token(const std::int32_t* tokens, std::int64_t n, VocabRange range, TokenGroups& groups) {
  const auto local = [&](std::int64_t r) { return static_cast<std::size_t>(tokens[r] - range.first); };
  std::vector<std::int64_t> begin(static_cast<std::size_t>(range.rows) + 1, 0);
  for (std::int64_t r = 0; r < n; ++r) {
    if (range.holds(tokens[r])) ++begin[local(r) + 1];
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(range.rows); ++k) begin[k + 1] += begin[k];
  groups.order.resize(static_cast<std::size_t>(begin.back()));
  groups.starts.clear();
  std::vector<std::int64_t> next(begin.begin(), begin.end() - 1);
  for (std::int64_t r = 0; r < n; ++r) {
    if (range.holds(tokens[r])) groups.order[static_cast<std::size_t>(next[local(r)]++)] = static_cast<std::int32_t>(r);
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(range.rows); ++k) {
    if (begin[k + 1] > begin[k]) groups.starts.push_back(begin[k]);
  }
  groups.starts.push_back(begin.back());
}

// dwte (range.rows,c) += the dout (b,t,c) rows of the tokens in the range, dwpe (maxT,c) += the sum
// over batch of dout (null: none). Tokens already checked.
inline void embedding_range_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                     std::int64_t b, std::int64_t t, std::int64_t c, VocabRange range) {
  const std::int64_t blocks = (c + kEmbeddingColumnBlock - 1) / kEmbeddingColumnBlock;
#pragma omp parallel for schedule(static) if (b * t * c > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kEmbeddingColumnBlock;
    const std::int64_t width = c - j0 < kEmbeddingColumnBlock ? c - j0 : kEmbeddingColumnBlock;
    if (dwpe != nullptr) position_grads_block(dwpe, dout, b, t, c, j0, width);
    // Tokens: scatter-add in (b,t) order.
    for (std::int64_t r = 0; r < b * t; ++r) {
      if (!range.holds(tokens[r])) continue;
      const float* d = dout + r * c + j0;
      float* dst = dwte + (static_cast<std::int64_t>(tokens[r]) - range.first) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] += d[j];
    }
  }
}

// bf16: each token's rows are summed in f32 (in (b,t) order) and added to its row of dwte once, so a
// frequent token's gradient is rounded once, not once per occurrence.
inline void embedding_range_backward(Bf16* dwte, Bf16* dwpe, const Bf16* dout, const std::int32_t* tokens,
                                     std::int64_t b, std::int64_t t, std::int64_t c, VocabRange range) {
  thread_local TokenGroups calling_thread_groups;
  const TokenGroups& groups = calling_thread_groups;  // this thread's, read by every thread of the team below
  group_rows_by_token(tokens, b * t, range, calling_thread_groups);
  const std::int64_t blocks = (c + kEmbeddingColumnBlock - 1) / kEmbeddingColumnBlock;
  const std::size_t group_count = groups.starts.size() - 1;
#pragma omp parallel for schedule(static) if (b * t * c > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kEmbeddingColumnBlock;
    const std::int64_t width = c - j0 < kEmbeddingColumnBlock ? c - j0 : kEmbeddingColumnBlock;
    if (dwpe != nullptr) position_grads_block(dwpe, dout, b, t, c, j0, width);
    for (std::size_t g = 0; g < group_count; ++g) {
      float acc[kEmbeddingColumnBlock] = {};
      for (std::int64_t i = groups.starts[g]; i < groups.starts[g + 1]; ++i) {
        const Bf16* d = dout + static_cast<std::int64_t>(groups.order[static_cast<std::size_t>(i)]) * c + j0;
#pragma omp simd
        for (std::int64_t j = 0; j < width; ++j) acc[j] += to_f32(d[j]);
      }
      const std::int32_t token = tokens[groups.order[static_cast<std::size_t>(groups.starts[g])]];
      Bf16* dst = dwte + (static_cast<std::int64_t>(token) - range.first) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] = from_f32<Bf16>(to_f32(dst[j]) + acc[j]);
    }
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail
