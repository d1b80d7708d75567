// CPU token + position embedding. Forward copies rows in parallel over positions. Backward is a
// scatter-add: it is parallelised over column blocks (never over tokens), and within a block rows are
// added in (b,t) order, so repeated tokens accumulate in the same order for every thread count.
#include <algorithm>
#include <stdexcept>
#include <string>

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
}  // namespace

void LevelKernels::embedding_forward(float* out,                  // (b,t,c)
                                     const std::int32_t* tokens,  // (b,t) i32 in [0, v)
                                     const float* wte,            // (v,c)
                                     const float* wpe,            // (maxT,c), maxT >= t; or null
                                     std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {
  const std::int64_t rows = b * t;
  check_tokens(tokens, rows, v, "CpuKernels::embedding_forward");
#pragma omp parallel for schedule(static) if (rows * c > (1 << 15))
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* tok_row = wte + static_cast<std::int64_t>(tokens[r]) * c;
    float* o = out + r * c;
    if (wpe == nullptr) {
      std::copy(tok_row, tok_row + c, o);
      continue;
    }
    const float* pos_row = wpe + (r % t) * c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) o[j] = tok_row[j] + pos_row[j];
  }
}

void LevelKernels::embedding_backward(float* dwte,                 // (v,c) accumulated
                                      float* dwpe,                 // (maxT,c) accumulated; or null
                                      const float* dout,           // (b,t,c)
                                      const std::int32_t* tokens,  // (b,t)
                                      std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {
  check_tokens(tokens, b * t, v, "CpuKernels::embedding_backward");
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (b * t * c > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    // Positions: dwpe[t] += sum over batch, batch rows summed in order.
    for (std::int64_t ti = 0; ti < (dwpe != nullptr ? t : 0); ++ti) {
      float acc[kColumnBlock] = {};
      for (std::int64_t bi = 0; bi < b; ++bi) {
        const float* d = dout + (bi * t + ti) * c + j0;
#pragma omp simd
        for (std::int64_t j = 0; j < width; ++j) acc[j] += d[j];
      }
      float* dst = dwpe + ti * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] += acc[j];
    }
    // Tokens: scatter-add in (b,t) order.
    for (std::int64_t r = 0; r < b * t; ++r) {
      const float* d = dout + r * c + j0;
      float* dst = dwte + static_cast<std::int64_t>(tokens[r]) * c + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] += d[j];
    }
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
