// CPU reductions for gradient clipping and overflow checks; results are written to memory the
// caller passes (device memory on every backend). sum_squares splits x into chunks whose
// size depends on n only, sums each chunk in double, and adds the chunk sums in chunk order, so the
// result is the same bits for every thread count and every alignment of x. The chunk sums live in a fixed stack array (no
// allocation): n is cut into at most kMaxChunks chunks.
#include <cstdint>
#include <cstring>

#include "runtime/cpu/cpu_kernels.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kMinChunk = 1 << 14;
constexpr std::int64_t kMaxChunks = 512;
constexpr std::int64_t kParallelMin = 1 << 16;

}  // namespace

void CpuKernels::sum(const float* x, std::int64_t n, double* out) const {
  double total = 0.0;
  for (std::int64_t i = 0; i < n; ++i) total += x[i];
  *out = total;
}

void CpuKernels::sum_squares(const float* x, std::int64_t n, double* out) const {
  if (n <= 0) {
    *out = 0.0;
    return;
  }
  std::int64_t chunk = (n + kMaxChunks - 1) / kMaxChunks;
  chunk = chunk < kMinChunk ? kMinChunk : (chunk + 15) / 16 * 16;
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  double partial[kMaxChunks];
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    const std::int64_t begin = ci * chunk;
    const std::int64_t end = begin + chunk < n ? begin + chunk : n;
    // Eight lanes indexed by position within the chunk (not by address), combined in lane order:
    // the same bits whatever the pointer's alignment (shards of a flat buffer start anywhere).
    double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
      for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
    }
    for (int l = 0; i < end; ++i, ++l) lanes[l] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    double sum = 0.0;
    for (double lane : lanes) sum += lane;
    partial[ci] = sum;
  }
  double total = 0.0;
  for (std::int64_t ci = 0; ci < chunks; ++ci) total += partial[ci];
  *out = total;
}

void CpuKernels::has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const {
  int found = 0;
#pragma omp parallel for simd schedule(static) reduction(| : found) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof bits);
    found |= (bits & 0x7f800000u) == 0x7f800000u ? 1 : 0;
  }
  *out = found != 0 ? 1 : 0;
}

}  // namespace tessera
