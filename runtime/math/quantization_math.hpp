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
// from a table indexed by the value's float exponent and top 7 mantissa bits (cells narrower than
// the gaps between thresholds, so the start is the exact code or one below) and takes the last
// step with one threshold compare — the answer of a binary search, in a few instructions, and in a
// form a compiler vectorises (32-bit table loads and compares, no branches: gathers on the CPU).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include "tessera/precision/host_device.hpp"

namespace tessera {

// Cells of |x|: a float's bits >> 16 (8 exponent and 7 mantissa bits) from 2^-24 (below the
// smallest threshold of either map, 1.6e-7) up to 1.0; smaller magnitudes fall in cell 0, 1.0 and
// above (and NaN) in the last cell.
inline constexpr int kQuantCellShift = 16;
inline constexpr int kQuantFirstCell = 103 << 7;                  // 2^-24 = 2^(103 - 127)
inline constexpr int kQuantCells = (127 << 7) - kQuantFirstCell;  // 3072

TESSERA_HD int magnitude_cell(float x) {
  const int bits = static_cast<int>(std::bit_cast<std::uint32_t>(x) & 0x7fffffffu);
  const int cell = (bits >> kQuantCellShift) - kQuantFirstCell;
  return cell < 0 ? 0 : (cell < kQuantCells ? cell : kQuantCells - 1);
}

// The magnitudes cell c holds: [cell_lower(c), cell_upper(c)). The first cell starts at 0; the
// last ends at 2 (quantized values are x / absmax: at most 1 and a rounding).
constexpr float cell_lower(int c) {
  return c == 0 ? 0.0f : std::bit_cast<float>(static_cast<std::uint32_t>(c + kQuantFirstCell) << kQuantCellShift);
}
constexpr float cell_upper(int c) {
  return c + 1 == kQuantCells
             ? 2.0f
             : std::bit_cast<float>(static_cast<std::uint32_t>(c + 1 + kQuantFirstCell) << kQuantCellShift);
}

struct QuantizationMap {
  std::array<float, 256> values{};  // sorted ascending; code = index
  // Midpoints between neighbours: code c covers (t[c-1], t[c]]; t[255] is +infinity (a sentinel).
  std::array<float, 256> thresholds{};
  // Where quantize_code starts for a cell: the code of its smallest value (x >= 0: the cell's lower
  // edge; x < 0: minus its upper edge), at most kQuantSteps below the exact code. Slot s = cell for
  // x with the sign bit clear, kQuantCells + cell with it set; four slots' codes per 32-bit word
  // (slot s in bits [8 (s % 4), 8 (s % 4) + 8) of word s / 4), so a vector loop loads words.
  std::array<std::uint32_t, 2 * kQuantCells / 4> start_words{};
};

// Slots and word indices are ints: signed 32-bit indices are what vector gathers take.
TESSERA_HD constexpr int start_slot(bool sign_bit, int cell) { return (sign_bit ? kQuantCells : 0) + cell; }

TESSERA_HD constexpr int start_code(const QuantizationMap& map, int slot) {
  const std::uint32_t* words = map.start_words.data();
  return static_cast<int>((words[slot >> 2] >> ((slot & 3) * 8)) & 0xffu);
}

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
    const std::uint32_t codes[2] = {search_code(cell_lower(c), map.thresholds),
                                    search_code(-cell_upper(c), map.thresholds)};
    for (int sign = 0; sign < 2; ++sign) {
      const int slot = start_slot(sign == 1, c);
      map.start_words[static_cast<std::size_t>(slot >> 2)] |= codes[sign] << ((slot & 3) * 8);
    }
  }
  return map;
}

inline constexpr QuantizationMap kSignedDynamicMap = make_dynamic_map(true);
inline constexpr QuantizationMap kUnsignedDynamicMap = make_dynamic_map(false);

// How far a cell's start code can be below the exact code of a value in it, checked at compile time
// for every cell of both maps: quantize_code takes this one step.
inline constexpr int kQuantSteps = 1;

constexpr int worst_start_distance(const QuantizationMap& map) {
  int worst = 0;
  for (int c = 0; c < kQuantCells; ++c) {
    worst = std::max(worst, search_code(cell_upper(c), map.thresholds) - start_code(map, start_slot(false, c)));
    worst = std::max(worst, search_code(-cell_lower(c), map.thresholds) - start_code(map, start_slot(true, c)));
  }
  return worst;
}
static_assert(worst_start_distance(kSignedDynamicMap) <= kQuantSteps);
static_assert(worst_start_distance(kUnsignedDynamicMap) <= kQuantSteps);

// The code of the map value nearest to x (x in the map's range; values outside clamp to the ends):
// the number of thresholds below x, as search_code gives it. (-0 starts from the negative slot of
// cell 0, which the bound above covers: it codes as +0.)
TESSERA_HD std::uint8_t quantize_code(float x, const QuantizationMap& map) {
  const bool sign_bit = (std::bit_cast<std::uint32_t>(x) >> 31) != 0;
  int code = start_code(map, start_slot(sign_bit, magnitude_cell(x)));
  static_assert(kQuantSteps == 1);
  code += map.thresholds.data()[code] < x ? 1 : 0;
  return static_cast<std::uint8_t>(code);
}

TESSERA_HD float dequantize_code(std::uint8_t code, const QuantizationMap& map) {
  return map.values.data()[static_cast<int>(code)];  // an int index: what vector gathers take
}

// Signed codes are stored as i8: code - 128.
TESSERA_HD std::int8_t signed_code_to_i8(std::uint8_t code) {
  return static_cast<std::int8_t>(static_cast<int>(code) - 128);
}
TESSERA_HD std::uint8_t i8_to_signed_code(std::int8_t stored) {
  return static_cast<std::uint8_t>(static_cast<int>(stored) + 128);
}

}  // namespace tessera
