// exp_math against exp and exp2 in double over dense grids: fast_expf within 2 ulp over its
// range and clamped outside it; exp2_of_product within 3 ulp of 2^(a b) for any split of the
// exponent into a product; softmax_exp within 3 ulp plus the documented |x| * 1.4e-8 relative of
// the f32 log2(e), clamped below -87 and NaN kept.
#include "tessera/runtime/math/exp_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessera/core/random.hpp"

namespace tessera {
namespace {

// |actual - expected| in units of the last place of expected rounded to f32.
double ulps(float actual, double expected) {
  const float e = static_cast<float>(expected);
  const double ulp = std::nextafter(std::fabs(e), std::numeric_limits<float>::infinity()) - std::fabs(e);
  return std::fabs(static_cast<double>(actual) - expected) / ulp;
}

TEST(ExpMath, FastExpfWithinTwoUlpAndClamped) {
  constexpr int kPoints = 1 << 22;
  double worst = 0.0;
  float at = 0.0f;
  for (int i = 0; i <= kPoints; ++i) {
    const float x = static_cast<float>(kExpMinArg + (kExpMaxArg - kExpMinArg) * static_cast<double>(i) / kPoints);
    const double u = ulps(fast_expf(x), std::exp(static_cast<double>(x)));
    if (!(u <= worst)) worst = u, at = x;
  }
  EXPECT_LE(worst, 2.0) << "fast_expf(" << at << ") = " << fast_expf(at) << ", exp = " << std::exp(double{at});
  EXPECT_EQ(fast_expf(-1000.0f), fast_expf(kExpMinArg)) << "clamped below";
  EXPECT_EQ(fast_expf(1000.0f), fast_expf(kExpMaxArg)) << "clamped above";
  EXPECT_TRUE(std::isfinite(fast_expf(kExpMaxArg)));
  EXPECT_GT(fast_expf(kExpMinArg), 0.0f);
}

TEST(ExpMath, Exp2OfProductWithinThreeUlpForAnySplit) {
  Rng rng(5);
  double worst = 0.0;
  float at_a = 0.0f, at_b = 0.0f;
  for (int i = 0; i < 1 << 21; ++i) {
    // Exponents over [-126, 126], split as a * b with b over [0.05, 20] (and the plain b = 1).
    const double w = -126.0 + 252.0 * rng.uniform();
    const float b = i % 4 == 0 ? 1.0f : static_cast<float>(0.05 + 19.95 * rng.uniform());
    const float a = static_cast<float>(w / b);
    const double product = static_cast<double>(a) * b;  // exact in double
    if (std::fabs(product) > 126.0) continue;
    const double u = ulps(exp2_of_product(a, b), std::exp2(product));
    if (!(u <= worst)) worst = u, at_a = a, at_b = b;
  }
  EXPECT_LE(worst, 3.0) << "exp2_of_product(" << at_a << ", " << at_b << ") = " << exp2_of_product(at_a, at_b)
                        << ", exp2 = " << std::exp2(static_cast<double>(at_a) * at_b);
  for (int k = -126; k <= 126; k += 7) {
    EXPECT_LE(ulps(exp2_of_product(static_cast<float>(k), 1.0f), std::ldexp(1.0, k)), 1.0) << "2^" << k;
  }
}

TEST(ExpMath, SoftmaxExpWithinItsBoundClampedAndNanKept) {
  constexpr int kPoints = 1 << 22;
  double worst = 0.0;  // error over the bound, relative
  float at = 0.0f;
  for (int i = 0; i <= kPoints; ++i) {
    const float x = static_cast<float>(kExpMinArg * static_cast<double>(i) / kPoints);  // [-87, 0]
    const double expected = std::exp(static_cast<double>(x));
    const float rounded = static_cast<float>(expected);
    const double ulp = std::nextafter(rounded, 2.0f) - rounded;
    const double bound = 3.0 * ulp + std::fabs(x) * 1.4e-8 * expected;
    const double over = std::fabs(softmax_exp(x) - expected) / bound;
    if (!(over <= worst)) worst = over, at = x;
  }
  EXPECT_LE(worst, 1.0) << "softmax_exp(" << at << ") = " << softmax_exp(at) << ", exp = " << std::exp(double{at});
  EXPECT_EQ(softmax_exp(-1e30f), softmax_exp(kExpMinArg)) << "clamped below";
  EXPECT_EQ(softmax_exp(-std::numeric_limits<float>::infinity()), softmax_exp(kExpMinArg));
  EXPECT_TRUE(std::isnan(softmax_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_LE(ulps(softmax_exp(0.0f), 1.0), 2.0);
}

}  // namespace
}  // namespace tessera
