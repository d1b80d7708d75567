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
// by that maximum: quantize_code picks the nearest map value (ties go to the lower code). It starts
// from a table indexed by the value's float exponent and top 6 mantissa bits (cells narrower than
// the levels, so the start is at most a code or two off) and steps to the exact code with the
// thresholds — the answer of a binary search, in a few instructions.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include "precision/host_device.hpp"

namespace tessera {

// Cells of |x| in [0, 1]: a float's bits >> 17 (8 exponent and 6 mantissa bits) reach 8128 at 1.0.
inline constexpr int kQuantCells = 8192;

TESSERA_HD int magnitude_cell(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
  const std::uint32_t cell = bits >> 17;
  return cell < static_cast<std::uint32_t>(kQuantCells) ? static_cast<int>(cell) : kQuantCells - 1;
}

struct QuantizationMap {
  std::array<float, 256> values{};      // sorted ascending; code = index
  // Midpoints between neighbours: code c covers (t[c-1], t[c]]; t[255] is +infinity (a sentinel).
  std::array<float, 256> thresholds{};
  // Where quantize_code starts for a cell: the code of its smallest value (x >= 0: the cell's lower
  // edge; x < 0: minus its upper edge), at most kQuantSteps below the exact code.
  std::array<std::uint8_t, kQuantCells> start_positive{};
  std::array<std::uint8_t, kQuantCells> start_negative{};
};

// The code of the map value nearest to x by binary search over the thresholds (the number of
// thresholds below x); the definition quantize_code reproduces faster.
constexpr std::uint8_t search_code(float x, const std::array<float, 256>& thresholds) {
  int lo = 0;
  for (int step = 128; step > 0; step /= 2) {
    const int probe = lo + step - 1;
    if (probe < 255 && thresholds[static_cast<std::size_t>(probe)] < x) lo += step;
  }
  return static_cast<std::uint8_t>(lo);
}

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
  map.thresholds[255] = std::numeric_limits<float>::infinity();
  for (int c = 0; c < kQuantCells; ++c) {
    const float lower = std::bit_cast<float>(static_cast<std::uint32_t>(c) << 17);
    const float upper = std::bit_cast<float>(static_cast<std::uint32_t>(c + 1) << 17);
    map.start_positive[static_cast<std::size_t>(c)] = search_code(lower, map.thresholds);
    map.start_negative[static_cast<std::size_t>(c)] = search_code(-upper, map.thresholds);
  }
  return map;
}

inline constexpr QuantizationMap kSignedDynamicMap = make_dynamic_map(true);
inline constexpr QuantizationMap kUnsignedDynamicMap = make_dynamic_map(false);

// How far a cell's start code can be below the exact code of a value in it (checked at compile time).
inline constexpr int kQuantSteps = 2;

constexpr int worst_start_distance(const QuantizationMap& map) {
  int worst = 0;
  for (int c = 0; c + 1 < kQuantCells; ++c) {
    const float lower = std::bit_cast<float>(static_cast<std::uint32_t>(c) << 17);
    const float upper = std::bit_cast<float>(static_cast<std::uint32_t>(c + 1) << 17);
    worst = std::max(worst, search_code(upper, map.thresholds) - map.start_positive[static_cast<std::size_t>(c)]);
    worst = std::max(worst, search_code(-lower, map.thresholds) - map.start_negative[static_cast<std::size_t>(c)]);
  }
  return worst;
}
static_assert(worst_start_distance(kSignedDynamicMap) <= kQuantSteps);
static_assert(worst_start_distance(kUnsignedDynamicMap) <= kQuantSteps);

// The code of the map value nearest to x (x in the map's range; values outside clamp to the ends):
// the number of thresholds below x, as search_code gives it.
TESSERA_HD std::uint8_t quantize_code(float x, const QuantizationMap& map) {
  const auto cell = static_cast<std::size_t>(magnitude_cell(x));
  int code = x < 0.0f ? map.start_negative[cell] : map.start_positive[cell];
  for (int step = 0; step < kQuantSteps; ++step) code += map.thresholds[static_cast<std::size_t>(code)] < x ? 1 : 0;
  return static_cast<std::uint8_t>(code);
}

TESSERA_HD float dequantize_code(std::uint8_t code, const QuantizationMap& map) { return map.values[code]; }

// Signed codes are stored as i8: code - 128.
TESSERA_HD std::int8_t signed_code_to_i8(std::uint8_t code) { return static_cast<std::int8_t>(static_cast<int>(code) - 128); }
TESSERA_HD std::uint8_t i8_to_signed_code(std::int8_t stored) { return static_cast<std::uint8_t>(static_cast<int>(stored) + 128); }

}  // namespace tessera
