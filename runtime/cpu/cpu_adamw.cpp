// CPU AdamW: the shared element formula of runtime/kernels/adamw_math.hpp applied to SIMD vectors of
// 8 floats (std::experimental::fixed_size_simd), the tail padded to one more vector, OpenMP-parallel over fixed
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
  if (body == n) return;
  // The tail goes through the same vector code (padded with zeros), so every element gets the same
  // bits whichever lane or offset it falls at: shards of one flat buffer start anywhere.
  alignas(64) float tp[kWidth] = {}, tg[kWidth] = {}, tm[kWidth] = {}, tv[kWidth] = {};
  const std::int64_t rest = n - body;
  for (std::int64_t j = 0; j < rest; ++j) {
    tp[j] = param[body + j];
    tg[j] = grad[body + j];
    tm[j] = m[body + j];
    tv[j] = v[body + j];
  }
  FloatVec p(tp, stdx::element_aligned), mv(tm, stdx::element_aligned), vv(tv, stdx::element_aligned);
  adamw_element(p, FloatVec(tg, stdx::element_aligned), mv, vv, s);
  p.copy_to(tp, stdx::element_aligned);
  mv.copy_to(tm, stdx::element_aligned);
  vv.copy_to(tv, stdx::element_aligned);
  for (std::int64_t j = 0; j < rest; ++j) {
    param[body + j] = tp[j];
    m[body + j] = tm[j];
    v[body + j] = tv[j];
  }
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
