// quantization_tables: a dynamic quantization map (runtime/math/quantization_math.hpp) recast as
// byte tables of at most 1024 entries — sizes that AVX-512 VBMI byte permutes (vpermi2b: 64 lookups
// in a 128-entry table per instruction) look up in registers — so the CPU codes 64 values at a time
// without gathers and gets quantize_code's codes bit for bit.
//
// Quantizing x: its top 16 bits k (sign, exponent, 7 mantissa bits) name a cell through one 16-bit
// entry e = cell_entry[k >> 8] (a shift in bits 10-13, an offset in bits 0-9):
//   cell = ((k >> (e >> 10)) + e) mod 1024;
// each group k >> 8 (a sign and two binades) is cut as coarsely as keeps every cell at one
// threshold or none, so the code of x is the cell's start (the code of its lowest value) or one
// more: start + (thresholds[start] < x), the last step of quantize_code. Magnitudes of 2 and more
// (infinities and NaN too) are one cell per sign, coded as quantize_code codes them.
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "tessera/runtime/math/quantization_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

inline constexpr int kMaxQuantCells = 1024;

struct QuantizationTables {
  const QuantizationMap* map = nullptr;
  std::uint8_t code_xor = 0;  // stored byte = code ^ code_xor (0x80: the signed map's i8 codes)
  // [b][stored]: byte b (little end first) of the bits of values[stored ^ code_xor].
  std::array<std::array<std::uint8_t, 256>, 4> value_bytes{};
  // [b][code]: byte b of the bits of thresholds[code] (thresholds[255] is +infinity).
  std::array<std::array<std::uint8_t, 256>, 4> threshold_bytes{};
  std::array<std::array<std::uint8_t, 256>, 2> cell_entry_bytes{};  // [b][group k >> 8]: byte b of e
  std::array<std::uint8_t, kMaxQuantCells> cell_start{};            // by cell: a code
  int cells = 0;
};

namespace detail {

// The codes (search_code) of the lowest and the highest value whose top 16 bits lie in [k0, k1],
// both in one group with |x| < 2.
constexpr std::pair<int, int> code_span(const QuantizationMap& map, std::uint32_t k0, std::uint32_t k1) {
  const float first = std::bit_cast<float>(k0 << 16), last = std::bit_cast<float>((k1 << 16) | 0xffffu);
  const bool negative = (k0 >> 15) != 0;  // bits grow with the magnitude: the lowest value is the last
  return {search_code(negative ? last : first, map.thresholds), search_code(negative ? first : last, map.thresholds)};
}

constexpr bool one_threshold_per_cell(const QuantizationMap& map, std::uint32_t group, int shift) {
  for (std::uint32_t c = 0; c < (256u >> shift); ++c) {
    const std::uint32_t k0 = (group << 8) | (c << shift);
    const auto [lowest, highest] = code_span(map, k0, k0 + (1u << shift) - 1);
    if (highest - lowest > 1) return false;
  }
  return true;
}

constexpr bool at_least_two(std::uint32_t group) { return (group & 0x7fu) >= 0x40u; }  // exponent >= 128

}  // namespace detail

constexpr QuantizationTables make_quantization_tables(const QuantizationMap& map, std::uint8_t code_xor) {
  QuantizationTables t;
  t.map = &map;
  t.code_xor = code_xor;
  for (std::size_t s = 0; s < 256; ++s) {
    const auto value = std::bit_cast<std::uint32_t>(map.values[s ^ code_xor]);
    const auto threshold = std::bit_cast<std::uint32_t>(map.thresholds[s]);
    for (std::size_t b = 0; b < 4; ++b) {
      t.value_bytes[b][s] = static_cast<std::uint8_t>(value >> (8 * b));
      t.threshold_bytes[b][s] = static_cast<std::uint8_t>(threshold >> (8 * b));
    }
  }
  if (!(map.thresholds[254] < 2.0f)) throw std::logic_error("quantization map reaches 2");
  int next = 0;
  for (std::uint32_t group = 0; group < 256; ++group) {
    int shift = 8;
    if (!detail::at_least_two(group)) {
      while (shift > 0 && !detail::one_threshold_per_cell(map, group, shift)) --shift;
    }
    const int count = 256 >> shift;
    if (next + count > kMaxQuantCells) throw std::logic_error("quantization map needs more than 1024 cells");
    // The group's first cell is next: its offset is next - (group << 8 >> shift), mod 1024.
    const int offset = (next - static_cast<int>((group << 8) >> shift)) & (kMaxQuantCells - 1);
    const int entry = offset | (shift << 10);
    t.cell_entry_bytes[0][group] = static_cast<std::uint8_t>(entry);
    t.cell_entry_bytes[1][group] = static_cast<std::uint8_t>(entry >> 8);
    for (int c = 0; c < count; ++c) {
      const std::uint32_t k0 = (group << 8) | (static_cast<std::uint32_t>(c) << shift);
      const bool negative = group >= 128;
      // At 2 and above the start is 254, one below the top, as quantize_code's last cell starts:
      // NaN stays there (no threshold is below it), every number steps up to 255.
      const int start =
          detail::at_least_two(group) ? (negative ? 0 : 254) : detail::code_span(map, k0, k0 + (1u << shift) - 1).first;
      t.cell_start[static_cast<std::size_t>(next + c)] = static_cast<std::uint8_t>(start);
    }
    next += count;
  }
  t.cells = next;
  return t;
}

inline constexpr QuantizationTables kSignedQuantizationTables = make_quantization_tables(kSignedDynamicMap, 0x80);
inline constexpr QuantizationTables kUnsignedQuantizationTables = make_quantization_tables(kUnsignedDynamicMap, 0);

// The cell of x, as the vector code computes it.
constexpr int quantization_cell(float x, const QuantizationTables& t) {
  const std::uint32_t k = std::bit_cast<std::uint32_t>(x) >> 16, group = k >> 8;
  const std::uint32_t entry = t.cell_entry_bytes[0][group] | (t.cell_entry_bytes[1][group] << 8);
  return static_cast<int>(((k >> (entry >> 10)) + entry) & (kMaxQuantCells - 1));
}

// The stored code of x through the tables, one element at a time: what the vector code computes.
constexpr std::uint8_t table_quantize(float x, const QuantizationTables& t) {
  const int start = t.cell_start[static_cast<std::size_t>(quantization_cell(x, t))];
  const int code = start + (t.map->thresholds[static_cast<std::size_t>(start)] < x ? 1 : 0);
  return static_cast<std::uint8_t>(code ^ t.code_xor);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
