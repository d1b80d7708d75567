// CpuKernels::adamw_update: two steps worked by hand (bias correction, decoupled weight decay), a
// large array against a double reference (parallel path), SIMD body and scalar tail agreeing, zero
// learning rate leaving params alone, and the gradient scale giving the bits of a scale() pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::random_floats;

AdamWScalars scalars_at_step(int step, float lr, float wd) {
  AdamWScalars s;
  s.lr = lr;
  s.beta1 = 0.9f;
  s.beta2 = 0.999f;
  s.eps = 1e-8f;
  s.weight_decay = wd;
  s.bias_correction1 = 1.0f - std::pow(s.beta1, static_cast<float>(step));
  s.bias_correction2 = 1.0f - std::pow(s.beta2, static_cast<float>(step));
  return s;
}

TEST(CpuAdamW, TwoStepsWorkedByHand) {
  // p = 1, lr = 0.1, wd = 0.01, b1 = 0.9, b2 = 0.999.
  // Step 1, g = 0.5:   m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25,
  //                    p = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1) = 0.899000002
  // Step 2, g = -0.25: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
  //                    mhat = 0.02 / 0.19 = 0.10526316, vhat = 0.00031225 / 0.001999, sqrt = 0.39522538,
  //                    p = 0.899 - 0.1 * (0.10526316 / 0.39522539 + 0.00899) = 0.87146730
  // Tolerances: 0.9f and 0.999f are not exact, so 1 - beta2 in f32 is 0.00099998713 (1.3e-5 relative).
  CpuKernels k;
  float p = 1.0f, m = 0.0f, v = 0.0f;
  const float g1 = 0.5f, g2 = -0.25f;
  k.adamw_update(&p, &g1, &m, &v, 1, scalars_at_step(1, 0.1f, 0.01f));
  EXPECT_NEAR(m, 0.05, 1e-7);
  EXPECT_NEAR(v, 0.00025, 1e-8);
  EXPECT_NEAR(p, 0.899000002, 1e-6);
  k.adamw_update(&p, &g2, &m, &v, 1, scalars_at_step(2, 0.1f, 0.01f));
  EXPECT_NEAR(m, 0.02, 1e-7);
  EXPECT_NEAR(v, 0.00031225, 1e-8);
  EXPECT_NEAR(p, 0.87146730, 1e-6);
}

TEST(CpuAdamW, LargeArrayMatchesDoubleReference) {
  CpuKernels k;
  const std::int64_t n = 100003;
  auto p = random_floats(n, 1);
  const auto g = random_floats(n, 2);
  auto m = random_floats(n, 3, -0.1f, 0.1f);
  auto v = random_floats(n, 4, 0.0f, 0.01f);
  const auto p0 = p, m0 = m, v0 = v;
  const AdamWScalars s = scalars_at_step(7, 3e-3f, 0.1f);
  k.adamw_update(p.data(), g.data(), m.data(), v.data(), n, s);
  // The double reference uses the same f32 hyperparameters; tolerances are relative to the size of
  // the terms (b1 m and (1 - b1) g can nearly cancel).
  for (std::int64_t i = 0; i < n; ++i) {
    const double mi = s.beta1 * static_cast<double>(m0[i]) + (1.0 - s.beta1) * g[i];
    const double vi = s.beta2 * static_cast<double>(v0[i]) + (1.0 - s.beta2) * g[i] * static_cast<double>(g[i]);
    const double pi = p0[i] - s.lr * ((mi / s.bias_correction1) / (std::sqrt(vi / s.bias_correction2) + s.eps) +
                                      s.weight_decay * static_cast<double>(p0[i]));
    ASSERT_NEAR(m[i], mi, 1e-6 * (std::fabs(m0[i]) + 0.1 * std::fabs(g[i]))) << "m[" << i << "]";
    ASSERT_NEAR(v[i], vi, 1e-6 * vi) << "v[" << i << "]";
    ASSERT_NEAR(p[i], pi, 1e-6) << "param[" << i << "]";
  }
}

TEST(CpuAdamW, VectorBodyAndScalarTailAgreeBitForBit) {
  // 37 identical elements: the first 32 go through SIMD vectors, the last 5 through the scalar path.
  CpuKernels k;
  const std::int64_t n = 37;
  std::vector<float> p(n, 0.7f), g(n, -0.3f), m(n, 0.01f), v(n, 0.002f);
  k.adamw_update(p.data(), g.data(), m.data(), v.data(), n, scalars_at_step(3, 1e-2f, 0.1f));
  for (std::int64_t i = 1; i < n; ++i) {
    ASSERT_EQ(p[i], p[0]) << "param[" << i << "] vs param[0]";
    ASSERT_EQ(m[i], m[0]) << "m[" << i << "] vs m[0]";
    ASSERT_EQ(v[i], v[0]) << "v[" << i << "] vs v[0]";
  }
}

TEST(CpuAdamW, ZeroLearningRateKeepsParamsButUpdatesMoments) {
  CpuKernels k;
  float p = 2.0f, m = 0.0f, v = 0.0f;
  const float g = 1.0f;
  k.adamw_update(&p, &g, &m, &v, 1, scalars_at_step(1, 0.0f, 0.1f));
  EXPECT_EQ(p, 2.0f);
  EXPECT_NEAR(m, 0.1, 1e-7);
  EXPECT_NEAR(v, 0.001, 2e-8);
}

// A shard of a flat buffer may start at any element: updating elements [k, n) must give each of them
// the bits that updating [0, n) gives (ZeRO stages are compared bit for bit).
TEST(CpuAdamW, ResultDoesNotDependOnWhereTheRangeStarts) {
  const CpuKernels k;
  const std::int64_t n = 203;
  std::vector<float> p(n), g(n), m(n), v(n);
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] = std::sin(0.37f * i);
    g[i] = std::cos(0.91f * i) * 1e-3f;
    m[i] = 1e-4f * std::sin(1.3f * i);
    v[i] = 1e-7f * (1.5f + std::cos(0.2f * i));
  }
  AdamWScalars s;
  s.lr = 3e-3f;
  s.weight_decay = 0.1f;
  s.bias_correction1 = 0.19f;
  s.bias_correction2 = 0.0975f;
  for (std::int64_t start : {1, 3, 5, 7, 13}) {
    auto p0 = p, m0 = m, v0 = v, p1 = p, m1 = m, v1 = v;
    k.adamw_update(p0.data(), g.data(), m0.data(), v0.data(), n, s);
    k.adamw_update(p1.data() + start, g.data() + start, m1.data() + start, v1.data() + start, n - start, s);
    for (std::int64_t i = start; i < n; ++i) {
      ASSERT_EQ(p0[i], p1[i]) << "param " << i << " when the range starts at " << start;
      ASSERT_EQ(v0[i], v1[i]) << "v " << i << " when the range starts at " << start;
    }
  }
}

// grad_scale (the clip and loss-scale factor applied inside the update) gives the bits of
// scaling the gradients with scale() and updating with grad_scale 1, on 1 and 2 threads.
TEST(CpuAdamW, GradScaleGivesTheBitsOfAScalePassFirst) {
  const CpuKernels k;
  const std::int64_t n = 100003;
  const auto p0 = random_floats(n, 21);
  const auto g = random_floats(n, 22, -3.0f, 3.0f);
  const auto m0 = random_floats(n, 23, -0.1f, 0.1f);
  const auto v0 = random_floats(n, 24, 0.0f, 0.01f);
  AdamWScalars s = scalars_at_step(4, 1e-3f, 0.1f);
  for (float factor : {0.37f, 1.0f / 1024.0f, 3.0f}) {
    for (int threads : {1, 2}) {
      auto p1 = p0, m1 = m0, v1 = v0, p2 = p0, m2 = m0, v2 = v0, scaled = g;
      test::with_threads(threads, [&] {
        s.grad_scale = factor;
        k.adamw_update(p1.data(), g.data(), m1.data(), v1.data(), n, s);
        k.scale(scaled.data(), factor, n);
        s.grad_scale = 1.0f;
        k.adamw_update(p2.data(), scaled.data(), m2.data(), v2.data(), n, s);
      });
      const std::string what = "grad_scale " + std::to_string(factor) + ", " + std::to_string(threads) + " threads";
      test::expect_bit_equal(p1, p2, "param, " + what);
      test::expect_bit_equal(m1, m2, "m, " + what);
      test::expect_bit_equal(v1, v2, "v, " + what);
    }
  }
}

}  // namespace
}  // namespace tessera
