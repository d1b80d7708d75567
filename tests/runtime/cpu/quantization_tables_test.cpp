// The byte tables of the dynamic quantization maps against the maps themselves: every cell holds
// at most one threshold, so start + one step gives quantize_code's code for every float tried
// (each top-16-bit prefix with its extreme and middle low bits, every threshold and map value with
// their neighbours, the specials); the tables fit the 1024 cells of a three-level lookup; the value
// and threshold byte planes reassemble the maps' floats, the signed one indexed by the stored i8.
// tessera-test-unity: off (a CPU kernel level's internals: its detail namespace meets tessera's)
#include "tessera/runtime/cpu/quantization_tables.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tessera {
namespace {

const QuantizationTables* const kBoth[] = {&kSignedQuantizationTables, &kUnsignedQuantizationTables};

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

std::uint8_t stored(float x, const QuantizationTables& t) {
  return static_cast<std::uint8_t>(quantize_code(x, *t.map) ^ t.code_xor);
}

// x and its 64 neighbours in bits on each side (same sign).
void with_neighbours(float x, std::vector<float>& out) {
  for (int d = -64; d <= 64; ++d) out.push_back(float_of(bits_of(x) + static_cast<std::uint32_t>(d)));
}

TEST(QuantizationTables, FitTheCellTable) {
  for (const QuantizationTables* t : kBoth) {
    EXPECT_GT(t->cells, 256);
    EXPECT_LE(t->cells, kMaxQuantCells);
    for (std::uint32_t k = 0; k < 65536; ++k) {
      ASSERT_LT(quantization_cell(float_of(k << 16), *t), t->cells) << "top bits " << k;
    }
  }
}

TEST(QuantizationTables, EveryTopBitsPrefixCodesAsQuantizeCode) {
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7fff, 0x8000, 0xc001, 0xfffe, 0xffff};
  for (const QuantizationTables* t : kBoth) {
    for (std::uint32_t k = 0; k < 65536; ++k) {
      for (std::uint32_t low : lows) {
        const float x = float_of((k << 16) | low);
        ASSERT_EQ(table_quantize(x, *t), stored(x, *t)) << "bits " << std::hex << ((k << 16) | low);
      }
    }
  }
}

TEST(QuantizationTables, ThresholdsValuesAndSpecialsCodeAsQuantizeCode) {
  for (const QuantizationTables* t : kBoth) {
    std::vector<float> xs;
    for (int c = 0; c < 255; ++c) with_neighbours(t->map->thresholds[static_cast<std::size_t>(c)], xs);
    for (float v : t->map->values) with_neighbours(v, xs);
    for (float v : t->map->values) with_neighbours(-v, xs);
    const float inf = std::numeric_limits<float>::infinity();
    for (float s : {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1e30f, -1e30f, inf, -inf, 1e-45f, -1e-45f, 1e-38f}) {
      with_neighbours(s, xs);
    }
    xs.push_back(std::numeric_limits<float>::quiet_NaN());
    xs.push_back(-std::numeric_limits<float>::quiet_NaN());
    xs.push_back(float_of(0x7f800001u));  // a signalling NaN
    for (float x : xs) ASSERT_EQ(table_quantize(x, *t), stored(x, *t)) << "bits " << std::hex << bits_of(x);
  }
}

TEST(QuantizationTables, BytePlanesReassembleTheMaps) {
  for (const QuantizationTables* t : kBoth) {
    for (std::size_t s = 0; s < 256; ++s) {
      std::uint32_t value = 0, threshold = 0;
      for (std::size_t b = 0; b < 4; ++b) {
        value |= static_cast<std::uint32_t>(t->value_bytes[b][s]) << (8 * b);
        threshold |= static_cast<std::uint32_t>(t->threshold_bytes[b][s]) << (8 * b);
      }
      const auto code = static_cast<std::uint8_t>(s ^ t->code_xor);
      EXPECT_EQ(float_of(value), dequantize_code(code, *t->map)) << "stored " << s;
      EXPECT_EQ(threshold, bits_of(t->map->thresholds[s])) << "code " << s;
    }
  }
  // The signed map's stored byte is the i8 code: code 0 is stored as -128, byte 0x80.
  EXPECT_EQ(kSignedQuantizationTables.code_xor, static_cast<std::uint8_t>(signed_code_to_i8(0)));
  EXPECT_EQ(kUnsignedQuantizationTables.code_xor, 0);
}

}  // namespace
}  // namespace tessera
