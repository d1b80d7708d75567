// Shared pieces of the CUDA device tests: the skip when no GPU is usable (with the reason), and
// comparisons that say where and by how much two float vectors differ.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tessera/runtime/device_factory.hpp"

// Skips the test (GTEST_SKIP, so the suite passes on machines without a GPU) naming why.
#define TESSERA_REQUIRE_GPU()                                                               \
  do {                                                                                      \
    if (!::tessera::device_available(::tessera::DeviceChoice::kCuda)) {                     \
      GTEST_SKIP() << ::tessera::device_unavailable_reason(::tessera::DeviceChoice::kCuda); \
    }                                                                                       \
  } while (0)

namespace tessera::testing {

// "" when |actual - expected| <= tol * max(1e-30, max|expected|) everywhere, else the worst element:
// "<what>: 3 of 1024 elements differ; worst [17] expected 0.125 actual 0.1251 (rel 8.0e-05 > 1.0e-05)".
inline std::string compare_relative(const std::vector<float>& actual, const std::vector<float>& expected, double tol,
                                    const std::string& what) {
  if (actual.size() != expected.size()) {
    return what + ": " + std::to_string(actual.size()) + " elements, expected " + std::to_string(expected.size());
  }
  double scale = 1e-30;
  for (float x : expected) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  std::size_t bad = 0, worst = 0;
  double worst_rel = 0.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double rel = std::fabs(static_cast<double>(actual[i]) - expected[i]) / scale;
    if (!(rel <= tol)) ++bad;  // NaN counts as bad
    if (!(rel <= worst_rel)) {
      worst_rel = rel;
      worst = i;
    }
  }
  if (bad == 0) return "";
  char text[256];
  std::snprintf(
      text, sizeof text, ": %zu of %zu elements differ; worst [%zu] expected %.9g actual %.9g (rel %.2e > %.1e)", bad,
      actual.size(), worst, static_cast<double>(expected[worst]), static_cast<double>(actual[worst]), worst_rel, tol);
  return what + text;
}

}  // namespace tessera::testing
