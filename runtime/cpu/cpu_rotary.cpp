// CPU rotary position embedding with grouped-query heads (formulas in runtime/math/rotary_math.hpp):
// the hs/2 inverse frequencies once per call; parallel over positions, each computing its hs/2
// cosines and sines once and applying them to every query and key head. The key/value gradients of a group are summed
// in head order, so the bits do not depend on the thread count. bf16 elements are widened as they
// are read; a group's key and value gradients are summed in f32 and rounded once.
#include <cmath>
#include <vector>

#include "tessera/precision/bf16.hpp"
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
template <bool kBack, typename D, typename S>
void rotate_head(D* dst, const S* src, const float* cos_a, const float* sin_a, std::int64_t half) {
  for (std::int64_t j = 0; j < half; ++j) {
    float x1 = to_f32(src[j]), x2 = to_f32(src[j + half]);
    if constexpr (kBack) {
      rotary_rotate_back(x1, x2, cos_a[j], sin_a[j]);
    } else {
      rotary_rotate(x1, x2, cos_a[j], sin_a[j]);
    }
    dst[j] = from_f32<D>(x1);
    dst[j + half] = from_f32<D>(x2);
  }
}

template <typename T>
void rotary_qkv_forward_t(T* qkv,         // (b,t,3*nh*hs) written
                          const T* proj,  // (b,t,(nh+2*nkv)*hs)
                          std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv, std::int64_t hs,
                          float theta) {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  const std::vector<float> frequencies = inverse_frequencies(half, hs, theta);
#pragma omp parallel
  {
    std::vector<float> cos_a(static_cast<std::size_t>(half)), sin_a(static_cast<std::size_t>(half));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < b * t; ++r) {
      position_angles(cos_a.data(), sin_a.data(), r % t, frequencies);
      const T* p = proj + r * pc;
      T* o = qkv + r * 3 * c;
      for (std::int64_t h = 0; h < nh; ++h) {
        const std::int64_t kv = h / group;
        rotate_head<false>(o + h * hs, p + h * hs, cos_a.data(), sin_a.data(), half);
        rotate_head<false>(o + c + h * hs, p + c + kv * hs, cos_a.data(), sin_a.data(), half);
        const T* v = p + c + (nkv + kv) * hs;
        std::copy(v, v + hs, o + 2 * c + h * hs);
      }
    }
  }
}

template <typename T>
void rotary_qkv_backward_t(T* dproj,       // (b,t,(nh+2*nkv)*hs) written
                           const T* dqkv,  // (b,t,3*nh*hs)
                           std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv, std::int64_t hs,
                           float theta) {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  const std::vector<float> frequencies = inverse_frequencies(half, hs, theta);
#pragma omp parallel
  {
    std::vector<float> cos_a(static_cast<std::size_t>(half)), sin_a(static_cast<std::size_t>(half));
    std::vector<float> dk(static_cast<std::size_t>(hs)), dv(static_cast<std::size_t>(hs));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < b * t; ++r) {
      position_angles(cos_a.data(), sin_a.data(), r % t, frequencies);
      const T* d = dqkv + r * 3 * c;
      T* o = dproj + r * pc;
      for (std::int64_t h = 0; h < nh; ++h) rotate_head<true>(o + h * hs, d + h * hs, cos_a.data(), sin_a.data(), half);
      for (std::int64_t kv = 0; kv < nkv; ++kv) {
        // Sum the group's key gradients (rotation is linear: rotate the sum back once) and value gradients.
        std::fill(dk.begin(), dk.end(), 0.0f);
        std::fill(dv.begin(), dv.end(), 0.0f);
        for (std::int64_t h = kv * group; h < (kv + 1) * group; ++h) {
          const T* dkh = d + c + h * hs;
          const T* dvh = d + 2 * c + h * hs;
          for (std::int64_t j = 0; j < hs; ++j) {
            dk[static_cast<std::size_t>(j)] += to_f32(dkh[j]);
            dv[static_cast<std::size_t>(j)] += to_f32(dvh[j]);
          }
        }
        rotate_head<true>(o + c + kv * hs, dk.data(), cos_a.data(), sin_a.data(), half);
        T* dv_out = o + c + (nkv + kv) * hs;
        for (std::int64_t j = 0; j < hs; ++j) dv_out[j] = from_f32<T>(dv[static_cast<std::size_t>(j)]);
      }
    }
  }
}

}  // namespace

#define TESSERA_CPU_ROTARY_OPS(T)                                                                              \
  void LevelKernels::rotary_qkv_forward(T* qkv, const T* proj, std::int64_t b, std::int64_t t, std::int64_t nh, \
                                        std::int64_t nkv, std::int64_t hs, float theta) const {                 \
    rotary_qkv_forward_t(qkv, proj, b, t, nh, nkv, hs, theta);                                                  \
  }                                                                                                             \
  void LevelKernels::rotary_qkv_backward(T* dproj, const T* dqkv, std::int64_t b, std::int64_t t,               \
                                         std::int64_t nh, std::int64_t nkv, std::int64_t hs, float theta) const { \
    rotary_qkv_backward_t(dproj, dqkv, b, t, nh, nkv, hs, theta);                                               \
  }
TESSERA_CPU_ROTARY_OPS(float)
TESSERA_CPU_ROTARY_OPS(Bf16)
#undef TESSERA_CPU_ROTARY_OPS

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
