// quantize_run and dequantize_run against the shared element functions, bit for bit: runs of every
// length around the 64-element vector width at unaligned starts, scales that round the products,
// values from every decade of the maps, thresholds and their neighbours, and the specials (signed
// zeros, infinities, NaN, subnormals, magnitudes past 1). On a copy without the 64-wide path the
// tests skip: there both functions are the element loops they would be compared with. This file
// is compiled for the portable CPU kernel level and so sees the portable copy, which has no 64-wide
// path unless the build is TESSERA_NATIVE=ON on a CPU with AVX-512 VBMI; the avx512 level's
// lookups are checked through 8-bit AdamW, bit for bit against the avx2 level's element loops
// (tests/runtime/cpu/kernel_level_test.cpp).
// tessera-test-unity: off (a CPU kernel level's internals: its detail namespace meets tessera's)
#include "tessera/runtime/cpu/block_quantization.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera {
namespace {

const QuantizationTables* const kBoth[] = {&kSignedQuantizationTables, &kUnsignedQuantizationTables};

// Values the optimizer codes: decades 1e-8 .. 1 of both signs, thresholds +-1 ulp, specials.
std::vector<float> test_values(std::size_t n, std::uint64_t seed, const QuantizationMap& map) {
  Rng rng(seed);
  std::vector<float> x(n);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 1.0000001f, 2.0f, -3.0f, inf, -inf, nan, -nan, 1e-45f, -1e-40f};
  for (std::size_t i = 0; i < n; ++i) {
    const float u = rng.uniform();
    switch (i % 4) {
      case 0: x[i] = std::pow(10.0f, -8.0f * u) * (rng.uniform() < 0.5f ? -1.0f : 1.0f); break;
      case 1: {
        const float t = map.thresholds[static_cast<std::size_t>(u * 254.99f)];
        x[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(t) + static_cast<std::uint32_t>(i % 3) - 1u);
        break;
      }
      case 2: x[i] = 2.0f * u - 1.0f; break;
      default: x[i] = specials[i / 4 % std::size(specials)];
    }
  }
  return x;
}

TEST(BlockQuantization, QuantizeRunCodesAsQuantizeCode) {
  if (!vector_quantization_built()) GTEST_SKIP() << "this build codes element by element only";
  for (const QuantizationTables* t : kBoth) {
    const std::vector<float> x = test_values(5000, 7, *t->map);
    for (const float inv_scale : {1.0f, 0.7312f, 3.1e3f, 0.0f}) {
      for (const std::size_t offset : {0u, 1u, 13u}) {
        for (const std::size_t n : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 1000u, 4096u}) {
          std::vector<std::uint8_t> codes(n + 1, 0xa5);
          quantize_run(x.data() + offset, inv_scale, *t, codes.data(), static_cast<std::int64_t>(n));
          for (std::size_t i = 0; i < n; ++i) {
            const float y = x[offset + i] * inv_scale;
            ASSERT_EQ(codes[i], static_cast<std::uint8_t>(quantize_code(y, *t->map) ^ t->code_xor))
                << "x " << y << " (bits " << std::hex << std::bit_cast<std::uint32_t>(y) << std::dec << ") at " << i
                << " of " << n;
          }
          EXPECT_EQ(codes[n], 0xa5) << "wrote past the run of " << n;
        }
      }
    }
  }
}

TEST(BlockQuantization, DequantizeRunGivesTheMapsValuesTimesTheScale) {
  if (!vector_quantization_built()) GTEST_SKIP() << "this build decodes element by element only";
  std::vector<std::uint8_t> codes(4096 + 16);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i * 37 + i / 256);
  for (const QuantizationTables* t : kBoth) {
    for (const float scale : {1.0f, 0.0123f, 7.5e-9f}) {
      for (const std::size_t offset : {0u, 5u}) {
        for (const std::size_t n : {1u, 64u, 100u, 256u, 4096u}) {
          std::vector<float> out(n + 1, -7.0f);
          dequantize_run(codes.data() + offset, scale, *t, out.data(), static_cast<std::int64_t>(n));
          for (std::size_t i = 0; i < n; ++i) {
            const auto code = static_cast<std::uint8_t>(codes[offset + i] ^ t->code_xor);
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]),
                      std::bit_cast<std::uint32_t>(dequantize_code(code, *t->map) * scale))
                << "stored " << int(codes[offset + i]) << " at " << i << " of " << n;
          }
          EXPECT_EQ(out[n], -7.0f) << "wrote past the run of " << n;
        }
      }
    }
  }
}

TEST(BlockQuantization, RoundTripOfCodesIsTheIdentity) {
  // Every stored code decodes (scale 1) to a value that codes back to itself.
  std::vector<std::uint8_t> codes(256), again(256);
  std::vector<float> values(256);
  for (int c = 0; c < 256; ++c) codes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c);
  for (const QuantizationTables* t : kBoth) {
    dequantize_run(codes.data(), 1.0f, *t, values.data(), 256);
    quantize_run(values.data(), 1.0f, *t, again.data(), 256);
    EXPECT_EQ(again, codes);
  }
}

}  // namespace
}  // namespace tessera
