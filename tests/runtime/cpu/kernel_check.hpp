// Helpers shared by the CPU kernel tests: seeded random data, central finite differences in double,
// closeness checks that name the tensor, the index, expected and actual values, and a guard that
// runs code under a given OpenMP thread count.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera::test {

// The tolerances of the CPU kernels against their double references, relative to max |reference|:
// forward outputs, and backward against double finite differences.
inline constexpr double kForwardTol = 1e-5;
inline constexpr double kGradTol = 1e-3;

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

inline std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// Gradient of loss(x) by central differences, one coordinate at a time, in double.
inline std::vector<double> finite_difference(const std::function<double(const std::vector<double>&)>& loss,
                                             std::vector<double> x, double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss(x);
    x[i] = saved - h;
    const double down = loss(x);
    x[i] = saved;
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

inline double max_abs(const std::vector<double>& x) {
  double m = 0.0;
  for (double v : x) m = std::fmax(m, std::fabs(v));
  return m;
}

// Checks |actual - expected| <= rel_tol * max|expected| elementwise; reports the worst element.
inline void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, double rel_tol,
                         const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": size";
  const double scale = std::fmax(max_abs(expected), 1e-30);
  double worst = 0.0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(err <= worst) || std::isnan(err)) {
      worst = err;
      worst_i = i;
      if (std::isnan(err)) break;
    }
  }
  EXPECT_LE(worst, rel_tol * scale) << what << ": worst element [" << worst_i << "] expected " << expected[worst_i]
                                    << " actual " << actual[worst_i] << " (tolerance " << rel_tol << " x max|expected| "
                                    << scale << ")";
}

// Bit equality of two float arrays; reports the first difference.
inline void expect_bit_equal(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what << ": size";
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    if (ua != ub) {
      ADD_FAILURE() << what << ": element [" << i << "] differs: " << a[i] << " vs " << b[i];
      return;
    }
  }
}

// Runs body with omp_set_num_threads(threads), restoring the previous count afterwards.
inline void with_threads(int threads, const std::function<void()>& body) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  body();
  omp_set_num_threads(saved);
}

}  // namespace tessera::test
