// CpuKernels element-wise ops: GELU (fast formula vs the double tanh formula over a wide range,
// derivative by finite differences, in-place backward, the bits of the scalar gelu_math functions
// at any length, offset and thread count), add and scale (with aliasing), and dtype conversion
// (round trips, agreement with the scalar float_bits functions at any offset and thread count, i32
// refused).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/precision/float_bits.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/math/gelu_math.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::kGradTol;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;


double gelu_reference(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

TEST(CpuGelu, ForwardWithinOneMillionthRelativeOfTanhFormula) {
  // Dense sweep of [-12, 12]; relative error against the double tanh formula, with |gelu| floored at
  // 1e-3 (for x < -3.5 gelu is below 1e-3 and the absolute error stays below 2e-9).
  CpuKernels k;
  const std::int64_t n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(n);
  k.gelu_forward(y.data(), x.data(), n);
  double worst = 0.0;
  std::int64_t worst_i = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double ref = gelu_reference(x[i]);
    const double rel = std::fabs(y[i] - ref) / std::fmax(std::fabs(ref), 1e-3);
    if (!(rel <= worst)) {
      worst = rel;
      worst_i = i;
    }
  }
  EXPECT_LE(worst, 1e-6) << "gelu(" << x[worst_i] << ") expected " << gelu_reference(x[worst_i]) << " actual "
                         << y[worst_i];
  EXPECT_EQ(y[n / 2], 0.0f) << "gelu(0)";
}

TEST(CpuGelu, BackwardMatchesFiniteDifferencesAndRunsInPlace) {
  CpuKernels k;
  const std::int64_t n = 300;
  const auto x = random_floats(n, 1, -5.0f, 5.0f);
  const auto r = random_floats(n, 2);
  std::vector<float> dinp(n, 7.0f);
  k.gelu_backward(dinp.data(), x.data(), r.data(), n);
  const auto fd = finite_difference(
      [&](const std::vector<double>& xs) {
        double total = 0.0;
        for (std::int64_t i = 0; i < n; ++i) total += gelu_reference(xs[i]) * r[i];
        return total;
      },
      to_double(x));
  expect_close(dinp, fd, kGradTol, "gelu dinp");
  auto inplace = r;
  k.gelu_backward(inplace.data(), x.data(), inplace.data(), n);
  test::expect_bit_equal(inplace, dinp, "gelu backward with dinp == dout");
}

// One call per element, not inlined into a loop: the scalar code path of the formulas.
[[gnu::noinline]] float scalar_gelu(float x) { return gelu_value(x); }
[[gnu::noinline]] float scalar_gelu_grad(float x, float dout) { return gelu_derivative(x) * dout; }

// The vectorised loops (any length, so any vector tail; any start, so any alignment; 1 or 2
// threads) give every element the bits of the scalar functions another loop may call per element.
// The portable kernels: the level compiled with this file's flags (madd fuses only at avx2 and
// avx512; tests/runtime/cpu/kernel_level_test.cpp compares those levels with this one).
TEST(CpuGelu, KernelsGiveTheScalarFunctionsBitsAtAnyLengthOffsetAndThreadCount) {
  const CpuKernels k(CpuKernelLevel::kPortable);
  const std::int64_t total = 200003;  // above the parallel threshold
  auto x = random_floats(total, 4, -12.0f, 12.0f);
  x[5] = 0.0f;
  x[6] = -10.0f;
  x[7] = 10.0f;
  x[8] = std::numeric_limits<float>::infinity();
  const auto dout = random_floats(total, 5);
  std::vector<float> want_y(total), want_d(total);
  for (std::int64_t i = 0; i < total; ++i) {
    want_y[i] = scalar_gelu(x[i]);
    want_d[i] = scalar_gelu_grad(x[i], dout[i]);
  }
  for (int threads : {1, 2}) {
    for (std::int64_t offset : {0, 1, 3, 7}) {
      for (std::int64_t n : {std::int64_t{1}, std::int64_t{15}, std::int64_t{17}, std::int64_t{1001}, total - offset}) {
        std::vector<float> y(n), d(n);
        test::with_threads(threads, [&] {
          k.gelu_forward(y.data(), x.data() + offset, n);
          k.gelu_backward(d.data(), x.data() + offset, dout.data() + offset, n);
        });
        const std::string where = " (n " + std::to_string(n) + ", offset " + std::to_string(offset) + ", " +
                                  std::to_string(threads) + " threads)";
        test::expect_bit_equal(y, {want_y.begin() + offset, want_y.begin() + offset + n}, "gelu_forward" + where);
        test::expect_bit_equal(d, {want_d.begin() + offset, want_d.begin() + offset + n}, "gelu_backward" + where);
      }
    }
  }
}

TEST(CpuElementwise, AddAndScaleIncludingAliasing) {
  CpuKernels k;
  const std::int64_t n = 100000;  // above the parallel threshold
  const auto a = random_floats(n, 1);
  const auto b = random_floats(n, 2);
  std::vector<float> out(n);
  k.add(out.data(), a.data(), b.data(), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "add [" << i << "]";
  auto acc = a;
  k.add(acc.data(), acc.data(), b.data(), n);  // out aliases a
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(acc[i], a[i] + b[i]) << "add in place [" << i << "]";
  k.scale(acc.data(), -0.5f, n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(acc[i], (a[i] + b[i]) * -0.5f) << "scale [" << i << "]";
}

TEST(CpuConvert, MatchesScalarConversionsAndRoundTrips) {
  CpuKernels k;
  const std::int64_t n = 200000;  // above the parallel threshold
  auto x = random_floats(n, 3, -70000.0f, 70000.0f);
  x[0] = 1.0f + 1.0f / 256.0f;  // a bf16 tie: 0x3f808000 -> 0x3f80
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = std::numeric_limits<float>::quiet_NaN();
  x[3] = 1e-6f;  // an f16 subnormal
  std::vector<std::uint16_t> bf(n), hf(n), hf_from_bf(n);
  std::vector<float> back(n);
  k.convert(x.data(), DType::kF32, bf.data(), DType::kBF16, n);
  k.convert(x.data(), DType::kF32, hf.data(), DType::kF16, n);
  k.convert(bf.data(), DType::kBF16, hf_from_bf.data(), DType::kF16, n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf[i], f32_to_bf16(x[i])) << "f32->bf16 [" << i << "] of " << x[i];
    ASSERT_EQ(hf[i], f32_to_f16(x[i])) << "f32->f16 [" << i << "] of " << x[i];
    ASSERT_EQ(hf_from_bf[i], f32_to_f16(bf16_to_f32(bf[i]))) << "bf16->f16 [" << i << "]";
  }
  k.convert(bf.data(), DType::kBF16, back.data(), DType::kF32, n);
  std::vector<std::uint16_t> bf2(n);
  k.convert(back.data(), DType::kF32, bf2.data(), DType::kBF16, n);
  EXPECT_EQ(bf2, bf) << "bf16 -> f32 -> bf16 must be the identity";
  k.convert(hf.data(), DType::kF16, back.data(), DType::kF32, n);
  std::vector<std::uint16_t> hf2(n);
  k.convert(back.data(), DType::kF32, hf2.data(), DType::kF16, n);
  EXPECT_EQ(hf2, hf) << "f16 -> f32 -> f16 must be the identity";
  std::vector<std::uint16_t> bf_from_hf(n);
  k.convert(hf.data(), DType::kF16, bf_from_hf.data(), DType::kBF16, n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf_from_hf[i], f32_to_bf16(f16_to_f32(hf[i]))) << "f16->bf16 [" << i << "]";
  }
  std::vector<float> copy(n);
  k.convert(x.data(), DType::kF32, copy.data(), DType::kF32, n);
  EXPECT_EQ(std::memcmp(copy.data(), x.data(), n * sizeof(float)), 0) << "f32 -> f32 is a copy";
}

TEST(CpuConvert, SameBitsAtAnyOffsetAndThreadCount) {
  const CpuKernels k;
  const std::int64_t total = 300007;
  const auto x = random_floats(total, 8, -3e5f, 3e5f);
  for (int threads : {1, 2}) {
    for (std::int64_t offset : {0, 1, 5}) {
      const std::int64_t n = total - offset;
      std::vector<std::uint16_t> bf(n), hf(n);
      test::with_threads(threads, [&] {
        k.convert(x.data() + offset, DType::kF32, bf.data(), DType::kBF16, n);
        k.convert(x.data() + offset, DType::kF32, hf.data(), DType::kF16, n);
      });
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(bf[i], f32_to_bf16(x[offset + i]))
            << "f32->bf16 [" << i << "], offset " << offset << ", " << threads << " threads";
        ASSERT_EQ(hf[i], f32_to_f16(x[offset + i]))
            << "f32->f16 [" << i << "], offset " << offset << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuConvert, RefusesIntegerConversions) {
  CpuKernels k;
  std::int32_t i = 3;
  float f = 0.0f;
  EXPECT_THROW(k.convert(&i, DType::kI32, &f, DType::kF32, 1), std::invalid_argument);
  EXPECT_THROW(k.convert(&f, DType::kF32, &i, DType::kI32, 1), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
