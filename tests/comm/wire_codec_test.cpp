// The branch-free wire codecs against the reference conversions of precision/float_bits.hpp, bit
// for bit: every f16 value widened; f32 values narrowed over every sign and exponent with the low
// bits at and around every rounding boundary of f16 (bit 13) and bf16 (bit 16), plus NaNs with
// payloads, infinities, zeros, subnormals, and a million values from a fixed generator.
#include "tessera/comm/wire_codec.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iomanip>
#include <vector>

#include "tessera/precision/float_bits.hpp"

namespace tessera::detail {
namespace {

std::vector<std::uint32_t> narrowing_inputs() {
  std::vector<std::uint32_t> in;
  const std::uint32_t low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x17ff, 0x1800, 0x1fff,
                               0x2000, 0x2001, 0x3000, 0x7fff, 0x8000, 0x8001, 0xa000, 0xffff};
  for (std::uint32_t high = 0; high < (1u << 16); ++high) {
    for (std::uint32_t l : low) in.push_back((high << 16) | l);
  }
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < (1 << 20); ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    in.push_back(static_cast<std::uint32_t>(x));
  }
  return in;
}

TEST(WireCodec, F16WidensEveryValueAsTheReference) {
  for (std::uint32_t h = 0; h < (1u << 16); ++h) {
    const auto v = static_cast<std::uint16_t>(h);
    ASSERT_EQ(f32_bits(WireF16Codec::load(v)), f32_bits(f16_to_f32(v))) << "f16 0x" << std::hex << h;
  }
}

TEST(WireCodec, Bf16WidensEveryValueAsTheReference) {
  for (std::uint32_t h = 0; h < (1u << 16); ++h) {
    const auto v = static_cast<std::uint16_t>(h);
    ASSERT_EQ(f32_bits(WireBf16Codec::load(v)), f32_bits(bf16_to_f32(v))) << "bf16 0x" << std::hex << h;
  }
}

TEST(WireCodec, NarrowingMatchesTheReferenceAtEveryRoundingBoundary) {
  const std::vector<std::uint32_t> in = narrowing_inputs();
  std::size_t wrong_f16 = 0, wrong_bf16 = 0;
  for (std::uint32_t u : in) {
    const float x = f32_from_bits(u);
    if (WireF16Codec::store(x) != f32_to_f16(x) && wrong_f16++ < 4) {
      ADD_FAILURE() << "f16 of f32 0x" << std::hex << std::setw(8) << std::setfill('0') << u << ": expected 0x"
                    << f32_to_f16(x) << " actual 0x" << WireF16Codec::store(x);
    }
    if (WireBf16Codec::store(x) != f32_to_bf16(x) && wrong_bf16++ < 4) {
      ADD_FAILURE() << "bf16 of f32 0x" << std::hex << std::setw(8) << std::setfill('0') << u << ": expected 0x"
                    << f32_to_bf16(x) << " actual 0x" << WireBf16Codec::store(x);
    }
  }
  EXPECT_EQ(wrong_f16, 0u) << "of " << in.size() << " inputs";
  EXPECT_EQ(wrong_bf16, 0u) << "of " << in.size() << " inputs";
}

}  // namespace
}  // namespace tessera::detail
