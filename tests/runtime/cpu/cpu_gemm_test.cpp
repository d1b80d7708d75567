// CpuKernels::gemm and the linear layer against double-precision references: every transpose
// combination with padded strides, linear forward, gradients by finite differences, parameter-grad
// accumulation, and a bias gradient that is the same bits on 1 and 2 threads.
#include <gtest/gtest.h>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::kForwardTol;
using test::kGradTol;
using test::expect_bit_equal;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;


TEST(CpuGemm, AllTransposesWithStridesMatchReference) {
  CpuKernels k;
  const std::int64_t m = 5, n = 7, kk = 9, pad = 3;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const std::int64_t a_rows = ta ? kk : m, a_cols = ta ? m : kk;
      const std::int64_t b_rows = tb ? n : kk, b_cols = tb ? kk : n;
      const std::int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
      const auto a = random_floats(a_rows * lda, 1);
      const auto b = random_floats(b_rows * ldb, 2);
      auto c = random_floats(m * ldc, 3);
      const auto c0 = c;
      const float alpha = 0.75f, beta = -0.5f;
      k.gemm(ta, tb, m, n, kk, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
      std::vector<double> expected(m * ldc);
      std::vector<float> actual(m * ldc);
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < ldc; ++j) {
          double ref = c0[i * ldc + j];  // padding columns stay untouched
          if (j < n) {
            double dot = 0.0;
            for (std::int64_t p = 0; p < kk; ++p) {
              const double av = ta ? a[p * lda + i] : a[i * lda + p];
              const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
              dot += av * bv;
            }
            ref = alpha * dot + beta * static_cast<double>(c0[i * ldc + j]);
          }
          expected[i * ldc + j] = ref;
          actual[i * ldc + j] = c[i * ldc + j];
        }
      }
      expect_close(actual, expected, kForwardTol,
                   "gemm trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb));
    }
  }
}

TEST(CpuGemm, ZeroInnerDimensionScalesC) {
  CpuKernels k;
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  k.gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
}

struct LinearShape {
  std::int64_t n = 6, c = 7, oc = 5;
};

std::vector<double> linear_reference(const std::vector<double>& inp, const std::vector<double>& w,
                                     const std::vector<double>& bias, const LinearShape& s) {
  std::vector<double> out(s.n * s.oc);
  for (std::int64_t i = 0; i < s.n; ++i) {
    for (std::int64_t o = 0; o < s.oc; ++o) {
      double acc = bias.empty() ? 0.0 : bias[o];
      for (std::int64_t p = 0; p < s.c; ++p) acc += inp[i * s.c + p] * w[o * s.c + p];
      out[i * s.oc + o] = acc;
    }
  }
  return out;
}

double weighted_sum(const std::vector<double>& out, const std::vector<float>& r) {
  double total = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) total += out[i] * r[i];
  return total;
}

TEST(CpuLinear, ForwardMatchesReferenceWithAndWithoutBias) {
  CpuKernels k;
  const LinearShape s;
  const auto inp = random_floats(s.n * s.c, 10);
  const auto w = random_floats(s.oc * s.c, 11);
  const auto bias = random_floats(s.oc, 12);
  std::vector<float> out(s.n * s.oc, -7.0f);
  k.linear_forward(out.data(), inp.data(), w.data(), bias.data(), s.n, s.c, s.oc);
  expect_close(out, linear_reference(to_double(inp), to_double(w), to_double(bias), s), kForwardTol,
               "linear forward (bias)");
  std::fill(out.begin(), out.end(), -7.0f);
  k.linear_forward(out.data(), inp.data(), w.data(), nullptr, s.n, s.c, s.oc);
  expect_close(out, linear_reference(to_double(inp), to_double(w), {}, s), kForwardTol, "linear forward (no bias)");
}

TEST(CpuLinear, BackwardMatchesFiniteDifferences) {
  CpuKernels k;
  const LinearShape s;
  const auto inp = random_floats(s.n * s.c, 20);
  const auto w = random_floats(s.oc * s.c, 21);
  const auto bias = random_floats(s.oc, 22);
  const auto r = random_floats(s.n * s.oc, 23);  // L = sum(out * R), so dout = R

  std::vector<float> dinp(s.n * s.c, 99.0f);  // written, whatever it held
  std::vector<float> dw(s.oc * s.c, 0.0f), db(s.oc, 0.0f);
  k.linear_backward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), s.n, s.c, s.oc);

  const auto fd_inp = finite_difference(
      [&](const std::vector<double>& x) {
        return weighted_sum(linear_reference(x, to_double(w), to_double(bias), s), r);
      },
      to_double(inp));
  const auto fd_w = finite_difference(
      [&](const std::vector<double>& x) {
        return weighted_sum(linear_reference(to_double(inp), x, to_double(bias), s), r);
      },
      to_double(w));
  const auto fd_b = finite_difference(
      [&](const std::vector<double>& x) {
        return weighted_sum(linear_reference(to_double(inp), to_double(w), x, s), r);
      },
      to_double(bias));
  expect_close(dinp, fd_inp, kGradTol, "linear dinp");
  expect_close(dw, fd_w, kGradTol, "linear dweight");
  expect_close(db, fd_b, kGradTol, "linear dbias");
}

TEST(CpuLinear, ParameterGradsAccumulateAndNullsAreAllowed) {
  CpuKernels k;
  const LinearShape s;
  const auto inp = random_floats(s.n * s.c, 30);
  const auto w = random_floats(s.oc * s.c, 31);
  const auto dout = random_floats(s.n * s.oc, 32);
  std::vector<float> dw(s.oc * s.c, 0.0f), db(s.oc, 0.0f);
  k.linear_backward(nullptr, dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  const auto dw1 = dw, db1 = db;
  k.linear_backward(nullptr, dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  std::vector<double> dw2(dw1.begin(), dw1.end()), db2(db1.begin(), db1.end());
  for (auto& x : dw2) x *= 2.0;
  for (auto& x : db2) x *= 2.0;
  expect_close(dw, dw2, 1e-6, "dweight after two backward calls (expected twice one call)");
  expect_close(db, db2, 1e-6, "dbias after two backward calls (expected twice one call)");
  // No bias: dbias untouched, dweight still accumulated.
  std::vector<float> dw_nb(s.oc * s.c, 0.0f);
  k.linear_backward(nullptr, dw_nb.data(), nullptr, dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  expect_close(dw_nb, to_double(dw1), 1e-6, "dweight without bias");
}

TEST(CpuLinear, BiasGradIsBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t n = 1024, c = 8, oc = 200;
  const auto inp = random_floats(n * c, 40);
  const auto w = random_floats(oc * c, 41);
  const auto dout = random_floats(n * oc, 42);
  auto run = [&](int threads) {
    std::vector<float> dw(oc * c, 0.0f), db(oc, 0.5f);
    test::with_threads(threads, [&] {
      k.linear_backward(nullptr, dw.data(), db.data(), dout.data(), inp.data(), w.data(), n, c, oc);
    });
    return db;
  };
  expect_bit_equal(run(1), run(2), "dbias, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
