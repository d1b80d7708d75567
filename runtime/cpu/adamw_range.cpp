// adamw_range: AdamW over a range of elements, 16 at a time.
//
// GCC 12 reports the AVX-512 square root behind std::experimental::simd's sqrt as "may be used
// uninitialized": its own header starts the result from _mm512_undefined_ps(), a false positive
// (every lane is written). Silenced for this file only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "tessera/runtime/cpu/adamw_range.hpp"

#include <experimental/simd>

#include "tessera/runtime/math/adamw_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {
namespace {

namespace stdx = std::experimental;
using FloatVec = stdx::fixed_size_simd<float, kAdamWVectorWidth>;

}  // namespace

[[gnu::flatten]] void adamw_range(float* param, const float* grad, float* m, float* v, std::int64_t n,
                                  const AdamWScalars& s) {
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

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail

#pragma GCC diagnostic pop
