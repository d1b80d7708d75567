// CpuKernels residual add + LayerNorm: the fused forward gives the same bits as add then
// layernorm_forward (the sum, the output, mean and rstd), the fused backward the same bits as
// layernorm_backward then add (dinp; dweight and dbias accumulating over two calls), also with
// dinp aliasing dout, and the parameter gradients are the same bits on 1 and 2 threads.
#include <gtest/gtest.h>

#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::expect_bit_equal;
using test::random_floats;

constexpr float kResidualEps = 1e-5f;

struct ResidualShape {
  std::int64_t n, c;
};

// Channels not a multiple of the vector width or of the 64-column block; the last is large enough
// for the OpenMP loops to run in parallel.
const ResidualShape kResidualShapes[] = {{5, 19}, {17, 130}, {256, 96}};

std::string where(const ResidualShape& s) { return "n=" + std::to_string(s.n) + " c=" + std::to_string(s.c); }

TEST(CpuResidualLayerNorm, ForwardIsAddThenLayerNorm) {
  CpuKernels k;
  for (const ResidualShape& s : kResidualShapes) {
    const auto a = random_floats(s.n * s.c, 1, -2.0f, 3.0f);
    const auto b = random_floats(s.n * s.c, 2);
    const auto w = random_floats(s.c, 3, 0.5f, 1.5f);
    const auto bias = random_floats(s.c, 4);
    std::vector<float> sum(s.n * s.c), out(s.n * s.c), mean(s.n), rstd(s.n);
    std::vector<float> sum_ref(s.n * s.c), out_ref(s.n * s.c), mean_ref(s.n), rstd_ref(s.n);
    k.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                 bias.data(), s.n, s.c, kResidualEps);
    k.add(sum_ref.data(), a.data(), b.data(), s.n * s.c);
    k.layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), sum_ref.data(), w.data(), bias.data(), s.n,
                        s.c, kResidualEps);
    expect_bit_equal(sum, sum_ref, "residual sum, " + where(s));
    expect_bit_equal(out, out_ref, "LayerNorm output, " + where(s));
    expect_bit_equal(mean, mean_ref, "mean, " + where(s));
    expect_bit_equal(rstd, rstd_ref, "rstd, " + where(s));
  }
}

TEST(CpuResidualLayerNorm, BackwardIsLayerNormBackwardThenAddAndAccumulates) {
  CpuKernels k;
  for (const ResidualShape& s : kResidualShapes) {
    const auto inp = random_floats(s.n * s.c, 11, -2.0f, 3.0f);
    const auto w = random_floats(s.c, 12, 0.5f, 1.5f);
    const auto bias = random_floats(s.c, 13);
    const auto dout = random_floats(s.n * s.c, 14);
    const auto dres = random_floats(s.n * s.c, 15);
    std::vector<float> out(s.n * s.c), mean(s.n), rstd(s.n);
    k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), bias.data(), s.n, s.c, kResidualEps);
    std::vector<float> dinp(s.n * s.c), dw(s.c, 0.25f), db(s.c, -0.5f);
    std::vector<float> dinp_ref(s.n * s.c), dw_ref = dw, db_ref = db;
    for (int call = 0; call < 2; ++call) {
      k.residual_layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), dres.data(), inp.data(), w.data(),
                                    mean.data(), rstd.data(), s.n, s.c);
      k.layernorm_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data(),
                           mean.data(), rstd.data(), s.n, s.c);
      k.add(dinp_ref.data(), dinp_ref.data(), dres.data(), s.n * s.c);
      const std::string at = where(s) + ", call " + std::to_string(call + 1);
      expect_bit_equal(dinp, dinp_ref, "dinp, " + at);
      expect_bit_equal(dw, dw_ref, "dweight, " + at);
      expect_bit_equal(db, db_ref, "dbias, " + at);
    }
    // In place: dinp written over dout.
    std::vector<float> d = dout, dw2(s.c, 0.0f), db2(s.c, 0.0f);
    k.residual_layernorm_backward(d.data(), dw2.data(), db2.data(), d.data(), dres.data(), inp.data(), w.data(),
                                  mean.data(), rstd.data(), s.n, s.c);
    expect_bit_equal(d, dinp_ref, "dinp written over dout, " + where(s));
  }
}

TEST(CpuResidualLayerNorm, ParameterGradsAreBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const ResidualShape s{1024, 200};
  const auto inp = random_floats(s.n * s.c, 21);
  const auto w = random_floats(s.c, 22, 0.5f, 1.5f);
  const auto dout = random_floats(s.n * s.c, 23);
  const auto dres = random_floats(s.n * s.c, 24);
  std::vector<float> mean(s.n), rstd(s.n), out(s.n * s.c);
  k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), w.data(), s.n, s.c, kResidualEps);
  auto run = [&](int threads) {
    std::vector<float> dinp(s.n * s.c), dw(s.c, 0.0f), db(s.c, 0.0f);
    test::with_threads(threads, [&] {
      k.residual_layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), dres.data(), inp.data(), w.data(),
                                    mean.data(), rstd.data(), s.n, s.c);
    });
    dw.insert(dw.end(), db.begin(), db.end());
    dw.insert(dw.end(), dinp.begin(), dinp.end());
    return dw;
  };
  expect_bit_equal(run(1), run(2), "dweight, dbias and dinp, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
