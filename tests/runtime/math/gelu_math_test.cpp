// gelu_math against the tanh formula evaluated in double over a dense grid: gelu_value within 1e-6
// relative where |gelu(x)| >= 1e-3 or |x| < 1e-3, and 1e-9 absolute elsewhere (x < -3.4);
// gelu_derivative within 3e-7 absolute (it peaks at 1.13, where its ulp is 1.2e-7); the clamp's
// special values (0, +-inf, NaN, |x| >= 10).
#include "tessera/runtime/math/gelu_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera {
namespace {

double gelu_reference(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

double gelu_derivative_reference(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  const double t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// 2^22 + 1 points evenly over [-12, 12], small magnitudes down to 2^-126 (a few per binade, both
// signs), and the neighbours of the clamp.
template <class Check>
void for_dense_grid(Check check) {
  constexpr int kPoints = 1 << 22;
  for (int i = 0; i <= kPoints; ++i) check(static_cast<float>(-12.0 + 24.0 * i / kPoints));
  for (int e = -126; e < -8; ++e) {
    for (float m : {1.0f, 1.2345678f, 1.75f, 1.9999999f}) {
      check(std::ldexp(m, e));
      check(-std::ldexp(m, e));
    }
  }
  for (float edge : {-10.0f, 10.0f}) {
    check(std::nextafter(edge, -20.0f));
    check(edge);
    check(std::nextafter(edge, 20.0f));
  }
}

TEST(GeluMath, ValueWithinOneMillionthRelativeOfTheTanhFormula) {
  double worst_rel = 0.0, worst_abs = 0.0;
  float at_rel = 0.0f, at_abs = 0.0f;
  for_dense_grid([&](float x) {
    const double ref = gelu_reference(x);
    const double err = std::fabs(static_cast<double>(gelu_value(x)) - ref);
    if (std::fabs(ref) >= 1e-3 || std::fabs(x) < 1e-3f) {
      if (!(err / std::fabs(ref) <= worst_rel)) worst_rel = err / std::fabs(ref), at_rel = x;
    } else if (!(err <= worst_abs)) {
      worst_abs = err, at_abs = x;
    }
  });
  EXPECT_LE(worst_rel, 1e-6) << "gelu(" << at_rel << ") expected " << gelu_reference(at_rel) << " actual "
                             << gelu_value(at_rel);
  EXPECT_LE(worst_abs, 1e-9) << "gelu(" << at_abs << ") expected " << gelu_reference(at_abs) << " actual "
                             << gelu_value(at_abs);
}

TEST(GeluMath, DerivativeWithinThreeTenMillionthsOfTheTanhFormula) {
  double worst = 0.0;
  float at = 0.0f;
  for_dense_grid([&](float x) {
    const double err = std::fabs(static_cast<double>(gelu_derivative(x)) - gelu_derivative_reference(x));
    if (!(err <= worst)) worst = err, at = x;
  });
  EXPECT_LE(worst, 3e-7) << "gelu'(" << at << ") expected " << gelu_derivative_reference(at) << " actual "
                         << gelu_derivative(at);
}

TEST(GeluMath, SpecialValuesAndTheClamp) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gelu_value(0.0f), 0.0f);
  EXPECT_EQ(gelu_derivative(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(gelu_value(std::numeric_limits<float>::quiet_NaN()))) << "NaN in, NaN out";
  EXPECT_EQ(gelu_value(inf), inf);
  EXPECT_EQ(gelu_value(-inf), -inf) << "the unclamped x over 1 + e(-10)";
  for (float x : {10.0f, 10.5f, 37.0f, 1e30f}) {
    EXPECT_EQ(gelu_value(x), x) << "gelu(x) = x in f32 for x >= 10";
    EXPECT_EQ(gelu_derivative(x), 1.0f) << "gelu'(" << x << ")";
  }
  for (float x : {-10.5f, -37.0f}) {
    EXPECT_LT(std::fabs(gelu_value(x)), 1e-35f) << "gelu(" << x << ")";
    EXPECT_LT(std::fabs(gelu_derivative(x)), 1e-35f) << "gelu'(" << x << ")";
  }
}

}  // namespace
}  // namespace tessera
