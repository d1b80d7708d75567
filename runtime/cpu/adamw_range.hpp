// adamw_range: the shared AdamW element formula (runtime/math/adamw_math.hpp) over n elements on
// one thread, as SIMD vectors of 16 floats (std::experimental::fixed_size_simd), the tail padded to one
// more vector so every element gets the same bits whatever lane or offset it falls at (shards of one
// flat buffer start anywhere). A plain scalar loop would not vectorise: sqrtf keeps a branch to the
// libm call that sets errno (about 3x slower here) unless the build turns math errno off.
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <cstdint>

#include "tessera/runtime/kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS::detail {

inline constexpr std::int64_t kAdamWVectorWidth = 16;

// param, grad, m, v (n) f32; param, m, v updated in place.
void adamw_range(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamWScalars& s);

}  // namespace tessera::TESSERA_CPU_LEVEL_NS::detail
