// The dynamic quantization maps of 8-bit optimizers: 256 sorted distinct values with 0 and 1, the
// decade structure (relative precision kept for small values), nearest-value coding with ties to
// the lower code, and the per-block error bound of a quantize/dequantize round trip.
#include "tessera/runtime/math/quantization_math.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera {
namespace {

TEST(QuantizationMap, SortedDistinctWithZeroAndOne) {
  for (const QuantizationMap* map : {&kSignedDynamicMap, &kUnsignedDynamicMap}) {
    for (std::size_t i = 1; i < 256; ++i) ASSERT_LT(map->values[i - 1], map->values[i]) << "index " << i;
    EXPECT_EQ(map->values[255], 1.0f);
    bool has_zero = false;
    for (float v : map->values) has_zero |= v == 0.0f;
    EXPECT_TRUE(has_zero);
  }
  EXPECT_EQ(kUnsignedDynamicMap.values[0], 0.0f);
  EXPECT_LT(kSignedDynamicMap.values[0], -0.99f);
  // The smallest non-zero magnitudes sit in the lowest decade, [1e-7, 1e-6].
  EXPECT_NEAR(kUnsignedDynamicMap.values[1], 1e-6 * (0.1 + 0.9 * 0.25), 1e-12);
  // Levels per decade: the top decade [0.1, 1] holds 64 signed and 128 unsigned positive levels.
  auto count_in = [](const QuantizationMap& m, float lo, float hi) {
    int n = 0;
    for (float v : m.values) n += v >= lo && v < hi;
    return n;
  };
  EXPECT_EQ(count_in(kSignedDynamicMap, 0.1f, 1.0f), 64);
  EXPECT_EQ(count_in(kUnsignedDynamicMap, 0.1f, 1.0f), 128);
  EXPECT_EQ(count_in(kSignedDynamicMap, 1e-7f, 1e-6f), 1);
}

TEST(QuantizationMap, CodesAreTheNearestValueTiesToTheLower) {
  Rng rng(11);
  for (const QuantizationMap* map : {&kSignedDynamicMap, &kUnsignedDynamicMap}) {
    const float lo = map->values[0];
    for (int trial = 0; trial < 20000; ++trial) {
      // Uniform in the map's range, and log-uniform to reach the small decades.
      const float u = lo + (1.0f - lo) * rng.uniform();
      const float x = trial % 2 ? u : std::copysign(std::pow(10.0f, -7.0f * rng.uniform()), lo < 0 ? u : 1.0f);
      const std::uint8_t code = quantize_code(x, *map);
      const float err = std::fabs(map->values[code] - x);
      for (int c = 0; c < 256; ++c) {
        ASSERT_LE(err, std::fabs(map->values[static_cast<std::size_t>(c)] - x))
            << "x " << x << " coded " << int(code) << " but code " << c << " is nearer";
      }
    }
    for (int c = 0; c < 255; ++c) {
      EXPECT_EQ(quantize_code(map->thresholds[static_cast<std::size_t>(c)], *map), c) << "a tie goes to the lower code";
    }
    EXPECT_EQ(quantize_code(2.0f, *map), 255) << "above the range clamps to the top";
  }
  for (int c = 0; c < 256; ++c) {
    EXPECT_EQ(i8_to_signed_code(signed_code_to_i8(static_cast<std::uint8_t>(c))), c);
  }
}

TEST(QuantizationMap, TheFastCodeIsTheBinarySearchCode) {
  // Every cell's lower edge and its neighbours in float, magnitudes below the first cell, every
  // threshold and its neighbours, both signs.
  for (const QuantizationMap* map : {&kSignedDynamicMap, &kUnsignedDynamicMap}) {
    std::vector<float> probes;
    for (int c = 0; c < kQuantCells; ++c) {
      const float lower = cell_lower(c);
      for (float x : {lower, std::nextafter(lower, 0.0f), std::nextafter(lower, 2.0f)}) {
        probes.push_back(x);
        probes.push_back(-x);
      }
    }
    for (float tiny : {1e-30f, 1e-10f, 3e-8f, 5.9e-8f, std::numeric_limits<float>::denorm_min()}) {
      probes.push_back(tiny);
      probes.push_back(-tiny);
    }
    for (float t : map->thresholds) {
      for (float x : {t, std::nextafter(t, -2.0f), std::nextafter(t, 2.0f)}) probes.push_back(x);
    }
    for (float x : probes) {
      if (x > 1.0f || x < map->values[0]) continue;
      ASSERT_EQ(quantize_code(x, *map), search_code(x, map->thresholds)) << "x " << x;
    }
  }
}

TEST(QuantizationMap, BlockRoundTripErrorIsBoundedPerDecade) {
  // A block of 2048 values of mixed magnitudes, scaled by its absmax: every value comes back within
  // half a level of its decade, i.e. |error| <= 0.45 x 10^(d-6) / 2^d x absmax for signed values in
  // decade d (and half that for unsigned), and within 0.71% of absmax in the top decade.
  Rng rng(5);
  std::vector<float> block(2048);
  for (float& x : block) x = static_cast<float>(rng.normal()) * std::pow(10.0f, -3.0f * rng.uniform());
  float absmax = 0.0f;
  for (float x : block) absmax = std::max(absmax, std::fabs(x));
  for (bool is_signed : {true, false}) {
    const QuantizationMap& map = is_signed ? kSignedDynamicMap : kUnsignedDynamicMap;
    double worst_top = 0.0;
    for (float raw : block) {
      const float x = is_signed ? raw : std::fabs(raw);
      const float back = dequantize_code(quantize_code(x / absmax, map), map) * absmax;
      const double n = std::fabs(x) / absmax;
      int d = 6;
      while (d > 0 && n < 0.1 * std::pow(10.0, d - 6)) --d;
      const double levels = is_signed ? std::pow(2.0, d) : std::pow(2.0, d + 1);
      const double bound = 0.45 * std::pow(10.0, d - 6) / levels * absmax * 1.0001;
      if (n >= 1e-7) {
        EXPECT_LE(std::fabs(back - x), bound) << "x " << x << " decade " << d;
      }
      if (n >= 0.1) worst_top = std::max(worst_top, static_cast<double>(std::fabs(back - x) / absmax));
    }
    EXPECT_LE(worst_top, is_signed ? 0.0071 : 0.0036) << (is_signed ? "signed" : "unsigned");
  }
}

}  // namespace
}  // namespace tessera
