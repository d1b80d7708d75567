// float_bits: f32 <-> bf16 and f32 <-> f16 bit patterns. Round-to-nearest-even ties, NaN kept NaN,
// infinities, f16 subnormals and overflow, exhaustive round trips over every bf16 and f16 pattern,
// and (where the compiler has _Float16) agreement with the compiler's own f32 -> f16 conversion over
// a dense sample of all f32 patterns (converted by the processor's F16C instruction where it has one,
// else by the compiler's library routine; the two are checked against each other on a sparser sample).
#include "tessera/precision/float_bits.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace tessera {
namespace {

float from_bits(std::uint32_t u) { return f32_from_bits(u); }

TEST(FloatBits, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f800000u)), 0x3f80u) << "1.0 is exact";
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80u) << "tie, even (0x3f80) kept";
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82u) << "tie, odd (0x3f81) rounds up to even";
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81u) << "just above a tie rounds up";
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f807fffu)), 0x3f80u) << "just below a tie rounds down";
  EXPECT_EQ(f32_to_bf16(from_bits(0xbf818000u)), 0xbf82u) << "negative tie";
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80u) << "max float rounds to +inf";
}

TEST(FloatBits, Bf16SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80u);
  EXPECT_EQ(f32_to_bf16(-inf), 0xff80u);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000u);
  EXPECT_TRUE(std::isinf(bf16_to_f32(0x7f80u)));
  for (std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xffc00000u, 0x7f80ffffu}) {
    const std::uint16_t h = f32_to_bf16(from_bits(nan));
    EXPECT_TRUE(std::isnan(bf16_to_f32(h))) << std::hex << "f32 NaN 0x" << nan << " became bf16 0x" << h;
    EXPECT_EQ(h & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << "NaN sign of 0x" << nan;
  }
}

TEST(FloatBits, Bf16RoundTripIsExhaustivelyTheIdentity) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = bf16_to_f32(static_cast<std::uint16_t>(h));
    ASSERT_EQ(f32_bits(f), h << 16) << std::hex << "bf16 0x" << h;
    const std::uint16_t back = f32_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_to_f32(back))) << std::hex << "bf16 NaN 0x" << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << "bf16 0x" << h << " -> f32 -> bf16 gave 0x" << back;
    }
  }
}

TEST(FloatBits, F16NormalsTiesAndOverflow) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00u);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000u);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bffu) << "largest f16";
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bffu) << "below the rounding boundary";
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00u) << "tie at the top rounds to inf";
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00u);
  EXPECT_EQ(f32_to_f16(-1e6f), 0xfc00u);
  // 1 + 2^-11 is the tie between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01): stays 0x3c00.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);
  // 1 + 3 * 2^-11 is the tie between 0x3c01 and 0x3c02 (even): rounds up to 0x3c02.
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f * std::ldexp(1.0f, -11)), 0x3c02u);
}

TEST(FloatBits, F16SubnormalsAndUnderflow) {
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400u) << "smallest normal";
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03ffu) << "largest subnormal";
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001u) << "smallest subnormal";
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000u) << "tie between 0 and 2^-24 rounds to even 0";
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001u) << "above the tie";
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002u) << "tie between 1 and 2 (x 2^-24) rounds to 2";
  EXPECT_EQ(f32_to_f16(std::ldexp(5.0f, -25)), 0x0002u) << "tie between 2 and 3 rounds to 2";
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -24)), 0x8001u);
  EXPECT_EQ(f32_to_f16(1e-30f), 0x0000u);
  EXPECT_EQ(f32_to_f16(-1e-30f), 0x8000u);
  EXPECT_EQ(f16_to_f32(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x03ffu), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x8200u), -std::ldexp(1.0f, -15));
}

TEST(FloatBits, F16SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16(inf), 0x7c00u);
  EXPECT_EQ(f32_to_f16(-inf), 0xfc00u);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00u)));
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000u);
  for (std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffffffffu}) {
    const std::uint16_t h = f32_to_f16(from_bits(nan));
    EXPECT_TRUE(std::isnan(f16_to_f32(h))) << std::hex << "f32 NaN 0x" << nan << " became f16 0x" << h;
  }
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01u))) << "f16 signalling NaN";
}

TEST(FloatBits, F16RoundTripIsExhaustivelyTheIdentity) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const std::uint16_t back = f32_to_f16(f);
    const bool is_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << "f16 NaN 0x" << h;
      ASSERT_TRUE(std::isnan(f16_to_f32(back))) << std::hex << "f16 NaN 0x" << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << "f16 0x" << h << " -> f32 " << f << " -> f16 gave 0x" << back;
    }
  }
}

#if defined(__FLT16_MAX__)
// The first f32 pattern of first, first + stride, ... (below end) where f32_to_f16 and the compiler's
// own conversion (static_cast<_Float16>) disagree; any f16 NaN answers an f32 NaN. Inlined into the
// two callers below, so the compiler converts in each with what that caller may use.
[[gnu::always_inline]] inline std::optional<std::uint32_t> first_disagreement(std::uint64_t first, std::uint64_t end,
                                                                              std::uint64_t stride) {
  for (std::uint64_t u = first; u < end; u += stride) {
    const float f = from_bits(static_cast<std::uint32_t>(u));
    const _Float16 compiler = static_cast<_Float16>(f);
    std::uint16_t compiler_bits;
    std::memcpy(&compiler_bits, &compiler, sizeof compiler_bits);
    const std::uint16_t ours = f32_to_f16(f);
    const bool agree = std::isnan(f) ? (ours & 0x7c00u) == 0x7c00u && (ours & 0x3ffu) != 0 : ours == compiler_bits;
    if (!agree) return static_cast<std::uint32_t>(u);
  }
  return std::nullopt;
}

// The compiler's conversion as its library routine (a software rounding: ~15 s over the sample).
std::optional<std::uint32_t> first_disagreement_in_software(std::uint64_t first, std::uint64_t end,
                                                            std::uint64_t stride) {
  return first_disagreement(first, end, stride);
}

#if defined(__x86_64__)
// The compiler's conversion as the processor's F16C instruction (vcvtps2ph, ~50x faster).
__attribute__((target("f16c"))) std::optional<std::uint32_t> first_disagreement_with_f16c(std::uint64_t first,
                                                                                          std::uint64_t end,
                                                                                          std::uint64_t stride) {
  return first_disagreement(first, end, stride);
}
#endif

// The faster of the two where the processor has F16C: both round to nearest even, as IEEE 754 says.
std::optional<std::uint32_t> first_disagreement_with_compiler(std::uint64_t first, std::uint64_t end,
                                                              std::uint64_t stride) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("f16c")) return first_disagreement_with_f16c(first, end, stride);
#endif
  return first_disagreement_in_software(first, end, stride);
}

// `pattern` with our and the compiler's f16 bits, for a failure message.
std::string disagreement(std::uint32_t pattern) {
  const float f = from_bits(pattern);
  const _Float16 compiler = static_cast<_Float16>(f);
  std::uint16_t compiler_bits;
  std::memcpy(&compiler_bits, &compiler, sizeof compiler_bits);
  std::ostringstream out;
  out << std::hex << "f32 0x" << pattern << ": ours 0x" << f32_to_f16(f) << ", the compiler's 0x" << compiler_bits;
  return out.str();
}

TEST(FloatBits, F16MatchesCompilerConversionOnSampledF32Patterns) {
  // Every 61st f32 pattern (about 70 million), plus every 7th pattern near the f16 subnormal range.
  const auto sampled = first_disagreement_with_compiler(0, std::uint64_t{1} << 32, 61);
  EXPECT_FALSE(sampled.has_value()) << disagreement(sampled.value_or(0));
  const auto subnormal = first_disagreement_with_compiler(0x33000000u - 4096, 0x38800000u + 4096, 7);
  EXPECT_FALSE(subnormal.has_value()) << disagreement(subnormal.value_or(0));
}

TEST(FloatBits, F16CAndTheSoftwareConversionAgreeOnASample) {
  // The two forms of the compiler's conversion the test above may use, against each other through
  // f32_to_f16 on a sparser sample (every 4099th pattern, about a million, ~0.3 s in software).
  EXPECT_EQ(first_disagreement_in_software(0, std::uint64_t{1} << 32, 4099), std::nullopt);
  EXPECT_EQ(first_disagreement_with_compiler(0, std::uint64_t{1} << 32, 4099), std::nullopt);
}
#endif

}  // namespace
}  // namespace tessera
