// CPU token + position embedding. Forward copies rows in parallel over positions. Backward is a
// scatter-add: it is parallelised over column blocks (never over tokens), and within a block rows are
// added in (b,t) order, so repeated tokens accumulate in the same order for every thread count. In
// bf16 the rows of a token are summed in f32 first and added to its gradient row once.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {
constexpr std::int64_t kColumnBlock = 64;  // floats per column block (4 cache lines)

// A token outside the table would read (forward) or write (backward) past wte: refuse the whole call.
void check_tokens(const std::int32_t* tokens, std::int64_t n, std::int64_t v, const char* where) {
  std::int32_t lo = 0, hi = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi)
  for (std::int64_t i = 0; i < n; ++i) {
    lo = tokens[i] < lo ? tokens[i] : lo;
    hi = tokens[i] > hi ? tokens[i] : hi;
  }
  if (lo >= 0 && hi < v) return;
  for (std::int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= v) {
      throw_id_outside(where, "token", i, tokens[i], v, "embedding table");
    }
  }
}
template <typename T>
void embedding_forward_t(T* out,                     // (b,t,c)
                         const std::int32_t* tokens,  // (b,t) i32 in [0, v)
                         const T* wte,                // (v,c)
                         const T* wpe,                // (maxT,c), maxT >= t; or null
                         std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) {
  const std::int64_t rows = b * t;
  check_tokens(tokens, rows, v, "CpuKernels::embedding_forward");
#pragma omp parallel for schedule(static) if (rows * c > (1 << 15))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* tok_row = wte + static_cast<std::int64_t>(tokens[r]) * c;
    T* o = out + r * c;
    if (wpe == nullptr) {
      std::copy(tok_row, tok_row + c, o);
      continue;
    }
    const T* pos_row = wpe + (r % t) * c;
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
    float acc[kColumnBlock] = {};
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

// The rows of a batch grouped by token, each group in (b,t) order (a stable counting sort): the rows
// of token order[i] ... are order[starts[g] .. starts[g + 1]), tokens[order[starts[g]]] its token.
struct TokenGroups {
  std::vector<std::int32_t> order;
  std::vector<std::int64_t> starts;
};

void group_rows_by_token(const std::int32_t* tokens, std::int64_t rows, std::int64_t v, TokenGroups& groups) {
  std::vector<std::int64_t> first(static_cast<std::size_t>(v) + 1, 0);
  for (std::int64_t r = 0; r < rows; ++r) ++first[static_cast<std::size_t>(tokens[r]) + 1];
  for (std::int64_t k = 0; k < v; ++k) first[static_cast<std::size_t>(k) + 1] += first[static_cast<std::size_t>(k)];
  groups.order.resize(static_cast<std::size_t>(rows));
  groups.starts.clear();
  std::vector<std::int64_t> next(first.begin(), first.end() - 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    groups.order[static_cast<std::size_t>(next[static_cast<std::size_t>(tokens[r])]++)] = static_cast<std::int32_t>(r);
  }
  for (std::int64_t k = 0; k < v; ++k) {
    if (first[static_cast<std::size_t>(k) + 1] > first[static_cast<std::size_t>(k)]) {
      groups.starts.push_back(first[static_cast<std::size_t>(k)]);
    }
  }
  groups.starts.push_back(rows);
}

void embedding_backward_t(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, std::int64_t b,
                          std::int64_t t, std::int64_t c, std::int64_t v) {
  check_tokens(tokens, b * t, v, "CpuKernels::embedding_backward");
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (b * t * c > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    if (dwpe != nullptr) position_grads_block(dwpe, dout, b, t, c, j0, width);
    // Tokens: scatter-add in (b,t) order.
    for (std::int64_t r = 0; r < b * t; ++r) {
      const float* d = dout + r * c + j0;
      float* dst = dwte + static_cast<std::int64_t>(tokens[r]) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] += d[j];
    }
  }
}

// bf16: each token's rows are summed in f32 (in (b,t) order) and added to its row of dwte once, so a
// frequent token's gradient is rounded once, not once per occurrence.
void embedding_backward_t(Bf16* dwte, Bf16* dwpe, const Bf16* dout, const std::int32_t* tokens, std::int64_t b,
                          std::int64_t t, std::int64_t c, std::int64_t v) {
  check_tokens(tokens, b * t, v, "CpuKernels::embedding_backward");
  thread_local TokenGroups calling_thread_groups;
  const TokenGroups& groups = calling_thread_groups;  // this thread's, read by every thread of the team below
  group_rows_by_token(tokens, b * t, v, calling_thread_groups);
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
  const std::size_t group_count = groups.starts.size() - 1;
#pragma omp parallel for schedule(static) if (b * t * c > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    if (dwpe != nullptr) position_grads_block(dwpe, dout, b, t, c, j0, width);
    for (std::size_t g = 0; g < group_count; ++g) {
      float acc[kColumnBlock] = {};
      for (std::int64_t i = groups.starts[g]; i < groups.starts[g + 1]; ++i) {
        const Bf16* d = dout + static_cast<std::int64_t>(groups.order[static_cast<std::size_t>(i)]) * c + j0;
#pragma omp simd
        for (std::int64_t j = 0; j < width; ++j) acc[j] += to_f32(d[j]);
      }
      const std::int32_t token = tokens[groups.order[static_cast<std::size_t>(groups.starts[g])]];
      Bf16* dst = dwte + static_cast<std::int64_t>(token) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] = from_f32<Bf16>(to_f32(dst[j]) + acc[j]);
    }
  }
}

}  // namespace

#define TESSERA_CPU_EMBEDDING_OPS(T)                                                                             \
  void LevelKernels::embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,         \
                                       std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const { \
    embedding_forward_t(out, tokens, wte, wpe, b, t, c, v);                                                     \
  }                                                                                                             \
  void LevelKernels::embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens,           \
                                        std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {  \
    embedding_backward_t(dwte, dwpe, dout, tokens, b, t, c, v);                                                 \
  }
TESSERA_CPU_EMBEDDING_OPS(float)
TESSERA_CPU_EMBEDDING_OPS(Bf16)
#undef TESSERA_CPU_EMBEDDING_OPS

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
