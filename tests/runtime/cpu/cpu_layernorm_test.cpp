// CpuKernels LayerNorm: forward (out, mean, rstd) against a double reference, gradients of input,
// weight and bias by finite differences, accumulation of the parameter gradients, in-place backward
// (dinp aliasing dout), and weight/bias gradients that are the same bits on 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>

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

constexpr float kEps = 1e-5f;

struct LnShape {
  std::int64_t n = 5, c = 19;  // c not a multiple of the vector width
};

struct LnReference {
  std::vector<double> out, mean, rstd;
};

LnReference layernorm_reference(const std::vector<double>& inp, const std::vector<double>& w,
                                const std::vector<double>& b, const LnShape& s) {
  LnReference r{std::vector<double>(s.n * s.c), std::vector<double>(s.n), std::vector<double>(s.n)};
  for (std::int64_t i = 0; i < s.n; ++i) {
    double mean = 0.0, var = 0.0;
    for (std::int64_t j = 0; j < s.c; ++j) mean += inp[i * s.c + j];
    mean /= static_cast<double>(s.c);
    for (std::int64_t j = 0; j < s.c; ++j) var += (inp[i * s.c + j] - mean) * (inp[i * s.c + j] - mean);
    var /= static_cast<double>(s.c);
    const double rstd = 1.0 / std::sqrt(var + kEps);
    for (std::int64_t j = 0; j < s.c; ++j) r.out[i * s.c + j] = (inp[i * s.c + j] - mean) * rstd * w[j] + b[j];
    r.mean[i] = mean;
    r.rstd[i] = rstd;
  }
  return r;
}

TEST(CpuLayerNorm, ForwardMatchesReference) {
  CpuKernels k;
  const LnShape s;
  const auto inp = random_floats(s.n * s.c, 1, -2.0f, 3.0f);
  const auto w = random_floats(s.c, 2, 0.5f, 1.5f);
  const auto b = random_floats(s.c, 3);
  std::vector<float> out(s.n * s.c), mean(s.n), rstd(s.n);
  k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), s.n, s.c, kEps);
  const auto ref = layernorm_reference(to_double(inp), to_double(w), to_double(b), s);
  expect_close(out, ref.out, kForwardTol, "layernorm out");
  expect_close(mean, ref.mean, kForwardTol, "layernorm mean");
  expect_close(rstd, ref.rstd, kForwardTol, "layernorm rstd");
}

TEST(CpuLayerNorm, BackwardMatchesFiniteDifferencesAndAccumulates) {
  CpuKernels k;
  const LnShape s;
  const auto inp = random_floats(s.n * s.c, 11, -2.0f, 3.0f);
  const auto w = random_floats(s.c, 12, 0.5f, 1.5f);
  const auto b = random_floats(s.c, 13);
  const auto r = random_floats(s.n * s.c, 14);  // L = sum(out * R)
  std::vector<float> out(s.n * s.c), mean(s.n), rstd(s.n);
  k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), s.n, s.c, kEps);
  std::vector<float> dinp(s.n * s.c, 42.0f), dw(s.c, 0.0f), db(s.c, 0.0f);
  k.layernorm_backward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), mean.data(), rstd.data(), s.n,
                       s.c);

  auto loss = [&](const std::vector<double>& x, const std::vector<double>& wd, const std::vector<double>& bd) {
    const auto o = layernorm_reference(x, wd, bd, s).out;
    double total = 0.0;
    for (std::size_t i = 0; i < o.size(); ++i) total += o[i] * r[i];
    return total;
  };
  const auto xd = to_double(inp), wd = to_double(w), bd = to_double(b);
  const auto fd_x = finite_difference([&](const std::vector<double>& x) { return loss(x, wd, bd); }, xd);
  const auto fd_w = finite_difference([&](const std::vector<double>& x) { return loss(xd, x, bd); }, wd);
  const auto fd_b = finite_difference([&](const std::vector<double>& x) { return loss(xd, wd, x); }, bd);
  expect_close(dinp, fd_x, kGradTol, "layernorm dinp");
  expect_close(dw, fd_w, kGradTol, "layernorm dweight");
  expect_close(db, fd_b, kGradTol, "layernorm dbias");

  // Second call: parameter grads double; in place (dinp == dout) gives the same dinp.
  auto dout_inplace = r;
  const auto dw1 = dw, db1 = db;
  k.layernorm_backward(dout_inplace.data(), dw.data(), db.data(), dout_inplace.data(), inp.data(), w.data(),
                       mean.data(), rstd.data(), s.n, s.c);
  expect_bit_equal(dout_inplace, dinp, "layernorm dinp computed in place over dout");
  for (std::int64_t j = 0; j < s.c; ++j) {
    EXPECT_FLOAT_EQ(dw[j], 2.0f * dw1[j]) << "dweight[" << j << "] after two calls";
    EXPECT_FLOAT_EQ(db[j], 2.0f * db1[j]) << "dbias[" << j << "] after two calls";
  }
}

TEST(CpuLayerNorm, ParameterGradsAreBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t n = 1024, c = 384;
  const auto inp = random_floats(n * c, 21);
  const auto w = random_floats(c, 22);
  const auto b = random_floats(c, 23);
  const auto dout = random_floats(n * c, 24);
  std::vector<float> out(n * c), mean(n), rstd(n);
  k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), n, c, kEps);
  auto run = [&](int threads) {
    std::vector<float> dinp(n * c), dw(c, 0.125f), db(c, 0.125f);
    test::with_threads(threads, [&] {
      k.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                           rstd.data(), n, c);
    });
    dw.insert(dw.end(), db.begin(), db.end());
    dw.insert(dw.end(), dinp.begin(), dinp.end());
    return dw;
  };
  expect_bit_equal(run(1), run(2), "layernorm dweight|dbias|dinp, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
