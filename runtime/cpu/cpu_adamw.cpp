// CPU AdamW: the shared element formula of runtime/kernels/adamw_math.hpp applied to SIMD vectors of
// 8 floats (std::experimental::fixed_size_simd) and then to the scalar tail, OpenMP-parallel over fixed
// chunks. A plain scalar loop would not vectorise: sqrtf keeps a branch to the libm call that sets
// errno (about 3x slower here) unless the build turns math errno off.
#include <experimental/simd>

#include "runtime/cpu/cpu_kernels.hpp"
#include "runtime/kernels/adamw_math.hpp"

namespace tessera {
namespace {

namespace stdx = std::experimental;
using FloatVec = stdx::fixed_size_simd<float, 8>;

constexpr std::int64_t kChunk = 1 << 14;  // elements per OpenMP work item, a multiple of the vector width

void adamw_range(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamWScalars& s) {
  constexpr auto kWidth = static_cast<std::int64_t>(FloatVec::size());
  const std::int64_t body = n / kWidth * kWidth;
  for (std::int64_t i = 0; i < body; i += kWidth) {
    FloatVec p(param + i, stdx::element_aligned);
    const FloatVec g(grad + i, stdx::element_aligned);
    FloatVec mv(m + i, stdx::element_aligned);
    FloatVec vv(v + i, stdx::element_aligned);
    adamw_element(p, g, mv, vv, s);
    p.copy_to(param + i, stdx::element_aligned);
    mv.copy_to(m + i, stdx::element_aligned);
    vv.copy_to(v + i, stdx::element_aligned);
  }
  for (std::int64_t i = body; i < n; ++i) adamw_element(param[i], grad[i], m[i], v[i], s);
}

}  // namespace

void CpuKernels::adamw_update(float* param,       // (n) updated
                              const float* grad,  // (n)
                              float* m,           // (n) updated
                              float* v,           // (n) updated
                              std::int64_t n, const AdamWScalars& s) const {
  static_assert(kChunk % static_cast<std::int64_t>(FloatVec::size()) == 0);
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    const std::int64_t begin = ci * kChunk;
    const std::int64_t len = n - begin < kChunk ? n - begin : kChunk;
    adamw_range(param + begin, grad + begin, m + begin, v + begin, len, s);
  }
}

}  // namespace tessera
