// quantization_math: the dynamic 8-bit quantization maps of 8-bit optimizers (Dettmers et al. 2021,
// "8-bit Optimizers via Block-wise Quantization") and the code <-> value functions, shared by the
// CPU loop and a CUDA kernel.
//
// A map holds 256 values in [-1, 1] (signed, for Adam's m) or [0, 1] (unsigned, for v), sorted:
// the code of a value is its index. The values are spread over decades like a float's exponent:
// decade d = 0..6 covers [0.1, 1] x 10^(d-6) with 2^d (signed) or 2^(d+1) (unsigned) evenly
// spaced levels (the midpoints of an even split of [0.1, 1]), so small values keep relative
// precision; the map also holds 0 and 1. The signed map mirrors the positive levels (it has no -1).
// A block of values is stored as its absolute maximum (f32) and each value's code after dividing
// by that maximum: quantize_code picks the nearest map value (ties go to the lower code).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "precision/host_device.hpp"

namespace tessera {

struct QuantizationMap {
  std::array<float, 256> values{};      // sorted ascending; code = index
  std::array<float, 255> thresholds{};  // midpoints between neighbours: code c covers (t[c-1], t[c]]
};

constexpr QuantizationMap make_dynamic_map(bool is_signed) {
  std::array<double, 256> v{};
  int n = 0;
  double scale = 1e-6;  // decade 0: [0.1, 1] x 10^-6
  for (int d = 0; d <= 6; ++d, scale *= 10.0) {
    const int levels = is_signed ? (1 << d) : (1 << (d + 1));
    for (int i = 0; i < levels; ++i) {
      // Midpoint of the i-th of `levels` equal parts of [0.1, 1].
      const double mid = 0.1 + 0.9 * (static_cast<double>(i) + 0.5) / static_cast<double>(levels);
      v[static_cast<std::size_t>(n++)] = mid * scale;
      if (is_signed) v[static_cast<std::size_t>(n++)] = -mid * scale;
    }
  }
  v[static_cast<std::size_t>(n++)] = 0.0;
  v[static_cast<std::size_t>(n++)] = 1.0;
  std::sort(v.begin(), v.end());
  QuantizationMap map;
  for (std::size_t i = 0; i < 256; ++i) map.values[i] = static_cast<float>(v[i]);
  for (std::size_t i = 0; i < 255; ++i) map.thresholds[i] = static_cast<float>((v[i] + v[i + 1]) / 2.0);
  return map;
}

inline constexpr QuantizationMap kSignedDynamicMap = make_dynamic_map(true);
inline constexpr QuantizationMap kUnsignedDynamicMap = make_dynamic_map(false);

// The code of the map value nearest to x (x in the map's range; values outside clamp to the ends):
// the number of thresholds below x, found by an 8-step binary search.
TESSERA_HD std::uint8_t quantize_code(float x, const QuantizationMap& map) {
  int lo = 0;
  for (int step = 128; step > 0; step /= 2) {
    const int probe = lo + step - 1;  // thresholds[probe] < x means the code is above probe
    if (probe < 255 && map.thresholds[static_cast<std::size_t>(probe)] < x) lo += step;
  }
  return static_cast<std::uint8_t>(lo);
}

TESSERA_HD float dequantize_code(std::uint8_t code, const QuantizationMap& map) { return map.values[code]; }

// Signed codes are stored as i8: code - 128.
TESSERA_HD std::int8_t signed_code_to_i8(std::uint8_t code) { return static_cast<std::int8_t>(static_cast<int>(code) - 128); }
TESSERA_HD std::uint8_t i8_to_signed_code(std::int8_t stored) { return static_cast<std::uint8_t>(static_cast<int>(stored) + 128); }

}  // namespace tessera
