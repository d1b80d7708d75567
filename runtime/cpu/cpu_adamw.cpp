// CPU AdamW: adamw_range (SIMD vectors through the shared element formula) OpenMP-parallel over fixed
// chunks.
#include "tessera/runtime/cpu/adamw_range.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kChunk = 1 << 14;  // elements per OpenMP work item, a multiple of the vector width

}  // namespace

void LevelKernels::adamw_update(float* param,       // (n) updated
                              const float* grad,  // (n)
                              float* m,           // (n) updated
                              float* v,           // (n) updated
                              std::int64_t n, const AdamWScalars& s) const {
  static_assert(kChunk % detail::kAdamWVectorWidth == 0);
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    const std::int64_t begin = ci * kChunk;
    const std::int64_t len = n - begin < kChunk ? n - begin : kChunk;
    detail::adamw_range(param + begin, grad + begin, m + begin, v + begin, len, s);
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
