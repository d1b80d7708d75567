// CPU rotary position embedding with grouped-query heads (formulas in runtime/math/rotary_math.hpp):
// the hs/2 inverse frequencies once per call; parallel over positions, each computing its hs/2
// cosines and sines once and applying them to every query and key head. The key/value gradients of a group are summed
// in head order, so the bits do not depend on the thread count.
#include <cmath>
#include <vector>

#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/rotary_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

std::vector<float> inverse_frequencies(std::int64_t half, std::int64_t hs, float theta) {
  std::vector<float> w(static_cast<std::size_t>(half));
  for (std::int64_t j = 0; j < half; ++j) w[static_cast<std::size_t>(j)] = rotary_inverse_frequency(j, hs, theta);
  return w;
}

// cos and sin (one per pair) of position p's angles, from the pairs' inverse frequencies.
void position_angles(float* cos_out, float* sin_out, std::int64_t p, const std::vector<float>& frequencies) {
  for (std::size_t j = 0; j < frequencies.size(); ++j) {
    const float a = rotary_angle(p, frequencies[j]);
    cos_out[j] = std::cos(a);
    sin_out[j] = std::sin(a);
  }
}

// dst (hs) = src (hs) rotated (forward) or rotated back.
template <bool kBack>
void rotate_head(float* dst, const float* src, const float* cos_a, const float* sin_a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) {
    float x1 = src[j], x2 = src[j + half];
    if constexpr (kBack) {
      rotary_rotate_back(x1, x2, cos_a[j], sin_a[j]);
    } else {
      rotary_rotate(x1, x2, cos_a[j], sin_a[j]);
    }
    dst[j] = x1;
    dst[j + half] = x2;
  }
}

}  // namespace

void LevelKernels::rotary_qkv_forward(float* qkv,         // (b,t,3*nh*hs) written
                                      const float* proj,  // (b,t,(nh+2*nkv)*hs)
                                      std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                                      std::int64_t hs, float theta) const {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  const std::vector<float> frequencies = inverse_frequencies(half, hs, theta);
#pragma omp parallel
  {
    std::vector<float> cos_a(static_cast<std::size_t>(half)), sin_a(static_cast<std::size_t>(half));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < b * t; ++r) {
      position_angles(cos_a.data(), sin_a.data(), r % t, frequencies);
      const float* p = proj + r * pc;
      float* o = qkv + r * 3 * c;
      for (std::int64_t h = 0; h < nh; ++h) {
        const std::int64_t kv = h / group;
        rotate_head<false>(o + h * hs, p + h * hs, cos_a.data(), sin_a.data(), half);
        rotate_head<false>(o + c + h * hs, p + c + kv * hs, cos_a.data(), sin_a.data(), half);
        const float* v = p + c + (nkv + kv) * hs;
        std::copy(v, v + hs, o + 2 * c + h * hs);
      }
    }
  }
}

void LevelKernels::rotary_qkv_backward(float* dproj,       // (b,t,(nh+2*nkv)*hs) written
                                       const float* dqkv,  // (b,t,3*nh*hs)
                                       std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                                       std::int64_t hs, float theta) const {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  const std::vector<float> frequencies = inverse_frequencies(half, hs, theta);
#pragma omp parallel
  {
    std::vector<float> cos_a(static_cast<std::size_t>(half)), sin_a(static_cast<std::size_t>(half));
    std::vector<float> dk(static_cast<std::size_t>(hs));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < b * t; ++r) {
      position_angles(cos_a.data(), sin_a.data(), r % t, frequencies);
      const float* d = dqkv + r * 3 * c;
      float* o = dproj + r * pc;
      for (std::int64_t h = 0; h < nh; ++h) rotate_head<true>(o + h * hs, d + h * hs, cos_a.data(), sin_a.data(), half);
      for (std::int64_t kv = 0; kv < nkv; ++kv) {
        // Sum the group's key gradients (rotation is linear: rotate the sum back once) and value gradients.
        float* dv = o + c + (nkv + kv) * hs;
        std::fill(dk.begin(), dk.end(), 0.0f);
        std::fill(dv, dv + hs, 0.0f);
        for (std::int64_t h = kv * group; h < (kv + 1) * group; ++h) {
          const float* dkh = d + c + h * hs;
          const float* dvh = d + 2 * c + h * hs;
          for (std::int64_t j = 0; j < hs; ++j) {
            dk[static_cast<std::size_t>(j)] += dkh[j];
            dv[j] += dvh[j];
          }
        }
        rotate_head<true>(o + c + kv * hs, dk.data(), cos_a.data(), sin_a.data(), half);
      }
    }
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
