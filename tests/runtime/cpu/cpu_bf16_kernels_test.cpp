// The bf16 overloads of the CPU compute ops against their f32 overloads on the same values (inputs
// rounded to bf16 first, so both see the same numbers), within kBf16Tolerance of precision/tolerance.hpp
// relative to the largest f32 result. Element-wise ops compute in f32 on the widened inputs and
// round each result once, so there the bf16 result is the f32 result rounded, bit for bit; ops with
// sums (GEMMs, norms, attention, the loss) only agree within the tolerance. Also: parameter gradients
// accumulate in f32 and round once (a token seen 256 times is not rounded 256 times), the fused ops
// give the bits of the separate ones in bf16 too, and the bits do not depend on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/precision/tolerance.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::expect_bit_equal;
using test::random_floats;
using test::with_threads;

// A tensor held both ways: bf16 values, and the same values widened to f32.
struct Pair {
  std::vector<Bf16> b;
  std::vector<float> f;

  Bf16* bp() { return b.data(); }
  float* fp() { return f.data(); }
};

Pair rounded(const std::vector<float>& values) {
  Pair p;
  for (float v : values) {
    p.b.push_back(from_f32<Bf16>(v));
    p.f.push_back(to_f32(p.b.back()));
  }
  return p;
}

Pair random_pair(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return rounded(random_floats(n, seed, lo, hi));
}

Pair zeros(std::size_t n) { return rounded(std::vector<float>(n, 0.0f)); }

std::vector<float> widened(const std::vector<Bf16>& b) {
  std::vector<float> out;
  for (Bf16 x : b) out.push_back(to_f32(x));
  return out;
}

std::vector<double> as_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// The bf16 result within kBf16Tolerance (of max |f32 result|) of the f32 result.
void expect_bf16_close(const Pair& p, const std::string& what) {
  test::expect_close(widened(p.b), as_double(p.f), kBf16Tolerance, what);
}

// The bf16 result is the f32 result rounded once, bit for bit.
void expect_rounded_once(const Pair& p, const std::string& what) {
  for (std::size_t i = 0; i < p.f.size(); ++i) {
    if (from_f32<Bf16>(p.f[i]).bits != p.b[i].bits) {
      ADD_FAILURE() << what << ": element [" << i << "] is " << to_f32(p.b[i]) << ", the f32 result " << p.f[i]
                    << " rounds to " << to_f32(from_f32<Bf16>(p.f[i]));
      return;
    }
  }
}

class CpuBf16Kernels : public ::testing::Test {
 protected:
  void embedding_case(std::int64_t c);  // forward and backward at width c
  CpuKernels k_;
};

TEST_F(CpuBf16Kernels, GemmInEveryLayoutWithAccumulationAndInnerBlocks) {
  // m, n over several output tiles; k past the inner block (256) so the panels are widened in pieces.
  const std::int64_t m = 130, n = 70, k = 300;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (float beta : {0.0f, 1.0f}) {
        Pair a = random_pair(static_cast<std::size_t>(m * k), 1), b = random_pair(static_cast<std::size_t>(k * n), 2);
        Pair c = random_pair(static_cast<std::size_t>(m * n), 3);
        const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
        k_.gemm(ta, tb, m, n, k, 0.5f, a.fp(), lda, b.fp(), ldb, beta, c.fp(), n);
        k_.gemm(ta, tb, m, n, k, 0.5f, a.bp(), lda, b.bp(), ldb, beta, c.bp(), n);
        expect_bf16_close(c, "gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                 " beta=" + std::to_string(beta));
      }
    }
  }
}

TEST_F(CpuBf16Kernels, LinearForwardAndBackwardAccumulateTheParameterGradients) {
  const std::int64_t n = 33, c = 40, oc = 24;
  Pair inp = random_pair(n * c, 4), w = random_pair(oc * c, 5), bias = random_pair(oc, 6);
  Pair out = zeros(n * oc);
  k_.linear_forward(out.fp(), inp.fp(), w.fp(), bias.fp(), n, c, oc);
  k_.linear_forward(out.bp(), inp.bp(), w.bp(), bias.bp(), n, c, oc);
  expect_bf16_close(out, "linear out");

  Pair dout = random_pair(n * oc, 7), dinp = zeros(n * c);
  Pair dw = random_pair(oc * c, 8), db = random_pair(oc, 9);  // gradients already there: accumulated into
  k_.linear_backward(dinp.fp(), dw.fp(), db.fp(), dout.fp(), inp.fp(), w.fp(), n, c, oc);
  k_.linear_backward(dinp.bp(), dw.bp(), db.bp(), dout.bp(), inp.bp(), w.bp(), n, c, oc);
  expect_bf16_close(dinp, "linear dinp");
  expect_bf16_close(dw, "linear dweight (accumulated)");
  expect_bf16_close(db, "linear dbias (accumulated)");
}

TEST_F(CpuBf16Kernels, LinearGeluGivesTheBitsOfLinearThenGelu) {
  const std::int64_t n = 17, c = 24, oc = 40;
  Pair inp = random_pair(n * c, 10), w = random_pair(oc * c, 11), bias = random_pair(oc, 12);
  Pair out = zeros(n * oc), pre = zeros(n * oc);
  k_.linear_gelu_forward(out.fp(), pre.fp(), inp.fp(), w.fp(), bias.fp(), n, c, oc);
  k_.linear_gelu_forward(out.bp(), pre.bp(), inp.bp(), w.bp(), bias.bp(), n, c, oc);
  expect_bf16_close(out, "linear+gelu out");
  std::vector<Bf16> pre2(pre.b.size()), out2(out.b.size());
  k_.linear_forward(pre2.data(), inp.bp(), w.bp(), bias.bp(), n, c, oc);
  k_.gelu_forward(out2.data(), pre2.data(), n * oc);
  expect_bit_equal(widened(out.b), widened(out2), "linear+gelu vs linear then gelu (bf16)");

  Pair dout = random_pair(n * oc, 13), dinp = zeros(n * c), dw = zeros(oc * c), db = zeros(oc);
  Pair dout2 = dout, dinp2 = dinp, dw2 = dw, db2 = db;
  k_.linear_gelu_backward(dinp.bp(), dw.bp(), db.bp(), dout.bp(), pre.bp(), inp.bp(), w.bp(), n, c, oc);
  k_.gelu_backward(dout2.bp(), pre.bp(), dout2.bp(), n * oc);
  k_.linear_backward(dinp2.bp(), dw2.bp(), db2.bp(), dout2.bp(), inp.bp(), w.bp(), n, c, oc);
  expect_bit_equal(widened(dinp.b), widened(dinp2.b), "linear+gelu backward dinp vs the separate ops");
  expect_bit_equal(widened(db.b), widened(db2.b), "linear+gelu backward dbias vs the separate ops");
  k_.linear_gelu_backward(dinp.fp(), dw.fp(), db.fp(), dout.fp(), pre.fp(), inp.fp(), w.fp(), n, c, oc);
  expect_bf16_close(dinp, "linear+gelu dinp");
  expect_bf16_close(dw, "linear+gelu dweight");
}

TEST_F(CpuBf16Kernels, ElementwiseOpsRoundTheF32ResultOnce) {
  const std::int64_t n = 1000, f = 37, rows = 11;
  Pair x = random_pair(n, 14, -4.0f, 4.0f), y = random_pair(n, 15), out = zeros(n);
  k_.gelu_forward(out.fp(), x.fp(), n);
  k_.gelu_forward(out.bp(), x.bp(), n);
  expect_rounded_once(out, "gelu forward");
  k_.gelu_backward(out.fp(), x.fp(), y.fp(), n);
  k_.gelu_backward(out.bp(), x.bp(), y.bp(), n);
  expect_rounded_once(out, "gelu backward");
  k_.add(out.fp(), x.fp(), y.fp(), n);
  k_.add(out.bp(), x.bp(), y.bp(), n);
  expect_rounded_once(out, "add");

  Pair gate_up = random_pair(rows * 2 * f, 16, -3.0f, 3.0f), h = zeros(rows * f), dh = random_pair(rows * f, 17);
  Pair dgate_up = zeros(rows * 2 * f);
  k_.swiglu_forward(h.fp(), gate_up.fp(), rows, f);
  k_.swiglu_forward(h.bp(), gate_up.bp(), rows, f);
  expect_rounded_once(h, "swiglu forward");
  k_.swiglu_backward(dgate_up.fp(), dh.fp(), gate_up.fp(), rows, f);
  k_.swiglu_backward(dgate_up.bp(), dh.bp(), gate_up.bp(), rows, f);
  expect_rounded_once(dgate_up, "swiglu backward");
}

TEST_F(CpuBf16Kernels, RotaryHeadsAndTheirGroupedGradients) {
  const std::int64_t b = 2, t = 9, nh = 4, nkv = 2, hs = 8;
  Pair proj = random_pair(b * t * (nh + 2 * nkv) * hs, 18), qkv = zeros(b * t * 3 * nh * hs);
  k_.rotary_qkv_forward(qkv.fp(), proj.fp(), b, t, nh, nkv, hs, 10000.0f);
  k_.rotary_qkv_forward(qkv.bp(), proj.bp(), b, t, nh, nkv, hs, 10000.0f);
  expect_rounded_once(qkv, "rotary forward");
  Pair dqkv = random_pair(b * t * 3 * nh * hs, 19), dproj = zeros(b * t * (nh + 2 * nkv) * hs);
  k_.rotary_qkv_backward(dproj.fp(), dqkv.fp(), b, t, nh, nkv, hs, 10000.0f);
  k_.rotary_qkv_backward(dproj.bp(), dqkv.bp(), b, t, nh, nkv, hs, 10000.0f);
  expect_rounded_once(dproj, "rotary backward (each group summed in f32, rounded once)");
}

TEST_F(CpuBf16Kernels, EmbeddingForwardAndBackward) {
  for (const std::int64_t c : {70, 2000}) {  // one thread, then a team of threads (b * t * c past 2^15)
    embedding_case(c);
  }
}

void CpuBf16Kernels::embedding_case(std::int64_t c) {
  const std::int64_t b = 3, t = 7, v = 11;
  std::vector<std::int32_t> tokens(b * t);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 5) % v);
  Pair wte = random_pair(v * c, 20), wpe = random_pair(t * c, 21), out = zeros(b * t * c);
  k_.embedding_forward(out.fp(), tokens.data(), wte.fp(), wpe.fp(), b, t, c, v);
  k_.embedding_forward(out.bp(), tokens.data(), wte.bp(), wpe.bp(), b, t, c, v);
  expect_rounded_once(out, "embedding forward");
  Pair dout = random_pair(b * t * c, 22), dwte = random_pair(v * c, 23), dwpe = random_pair(t * c, 24);
  k_.embedding_backward(dwte.fp(), dwpe.fp(), dout.fp(), tokens.data(), b, t, c, v);
  k_.embedding_backward(dwte.bp(), dwpe.bp(), dout.bp(), tokens.data(), b, t, c, v);
  expect_bf16_close(dwte, "embedding dwte (accumulated)");
  expect_bf16_close(dwpe, "embedding dwpe (accumulated)");
}

// 256 occurrences of one token, each adding 0.01: a sum rounded to bf16 after every row would stop
// growing near 2 (where bf16's step, 1/64, exceeds twice 0.01); summed in f32 and rounded once it is 2.56.
TEST_F(CpuBf16Kernels, ARepeatedTokensGradientIsSummedBeforeItIsRounded) {
  const std::int64_t b = 4, t = 64, c = 200, v = 2;  // b * t * c past 2^15: a team of threads
  const std::vector<std::int32_t> tokens(b * t, 1);
  std::vector<Bf16> dout(b * t * c, from_f32<Bf16>(0.01f)), dwte(v * c, from_f32<Bf16>(0.0f));
  k_.embedding_backward(dwte.data(), nullptr, dout.data(), tokens.data(), b, t, c, v);
  const float expected = 256.0f * to_f32(from_f32<Bf16>(0.01f));
  for (std::int64_t j = 0; j < c; ++j) {
    EXPECT_EQ(to_f32(dwte[c + j]), to_f32(from_f32<Bf16>(expected))) << "column " << j;
    EXPECT_EQ(to_f32(dwte[j]), 0.0f) << "token 0 was never seen";
  }
}

TEST_F(CpuBf16Kernels, LayerNormAndItsFusedResidualForms) {
  const std::int64_t n = 9, c = 70;
  Pair x = random_pair(n * c, 25, -2.0f, 3.0f), w = random_pair(c, 26, 0.5f, 1.5f), bias = random_pair(c, 27);
  Pair y = zeros(n * c);
  std::vector<float> mean(n), rstd(n), mean_b(n), rstd_b(n);
  k_.layernorm_forward(y.fp(), mean.data(), rstd.data(), x.fp(), w.fp(), bias.fp(), n, c, 1e-5f);
  k_.layernorm_forward(y.bp(), mean_b.data(), rstd_b.data(), x.bp(), w.bp(), bias.bp(), n, c, 1e-5f);
  expect_bf16_close(y, "layernorm out");
  test::expect_close(mean_b, as_double(mean), kF32Tolerance, "layernorm mean (f32 statistics of the same values)");
  test::expect_close(rstd_b, as_double(rstd), kF32Tolerance, "layernorm rstd");

  Pair dy = random_pair(n * c, 28), dx = zeros(n * c), dw = random_pair(c, 29), db = random_pair(c, 30);
  k_.layernorm_backward(dx.fp(), dw.fp(), db.fp(), dy.fp(), x.fp(), w.fp(), mean.data(), rstd.data(), n, c);
  k_.layernorm_backward(dx.bp(), dw.bp(), db.bp(), dy.bp(), x.bp(), w.bp(), mean_b.data(), rstd_b.data(), n, c);
  expect_bf16_close(dx, "layernorm dinp");
  expect_bf16_close(dw, "layernorm dweight (accumulated)");
  expect_bf16_close(db, "layernorm dbias (accumulated)");

  // Fused residual forms: the bits of add then layernorm, and of layernorm backward then add.
  Pair a = random_pair(n * c, 31), r = random_pair(n * c, 32);
  std::vector<Bf16> sum(n * c), out(n * c), sum2(n * c), out2(n * c);
  k_.residual_layernorm_forward(sum.data(), out.data(), mean_b.data(), rstd_b.data(), a.bp(), r.bp(), w.bp(),
                                bias.bp(), n, c, 1e-5f);
  k_.add(sum2.data(), a.bp(), r.bp(), n * c);
  k_.layernorm_forward(out2.data(), mean.data(), rstd.data(), sum2.data(), w.bp(), bias.bp(), n, c, 1e-5f);
  expect_bit_equal(widened(sum), widened(sum2), "residual sum vs add");
  expect_bit_equal(widened(out), widened(out2), "residual layernorm vs add then layernorm");
  std::vector<Bf16> d1(n * c), d2(n * c), dw1(c, from_f32<Bf16>(0.0f)), dw2 = dw1, db1 = dw1, db2 = dw1;
  k_.residual_layernorm_backward(d1.data(), dw1.data(), db1.data(), dy.bp(), r.bp(), sum.data(), w.bp(),
                                 mean_b.data(), rstd_b.data(), n, c);
  k_.layernorm_backward(d2.data(), dw2.data(), db2.data(), dy.bp(), sum.data(), w.bp(), mean_b.data(), rstd_b.data(),
                        n, c);
  k_.add(d2.data(), d2.data(), r.bp(), n * c);
  expect_bit_equal(widened(d1), widened(d2), "residual layernorm backward vs layernorm backward then add");
  expect_bit_equal(widened(dw1), widened(dw2), "residual layernorm dweight");
}

TEST_F(CpuBf16Kernels, RmsNorm) {
  const std::int64_t n = 9, c = 70;
  Pair x = random_pair(n * c, 33, -2.0f, 3.0f), w = random_pair(c, 34, 0.5f, 1.5f), y = zeros(n * c);
  std::vector<float> rstd(n), rstd_b(n);
  k_.rmsnorm_forward(y.fp(), rstd.data(), x.fp(), w.fp(), n, c, 1e-5f);
  k_.rmsnorm_forward(y.bp(), rstd_b.data(), x.bp(), w.bp(), n, c, 1e-5f);
  expect_bf16_close(y, "rmsnorm out");
  Pair dy = random_pair(n * c, 35), dx = zeros(n * c), dw = random_pair(c, 36);
  k_.rmsnorm_backward(dx.fp(), dw.fp(), dy.fp(), x.fp(), w.fp(), rstd.data(), n, c);
  k_.rmsnorm_backward(dx.bp(), dw.bp(), dy.bp(), x.bp(), w.bp(), rstd_b.data(), n, c);
  expect_bf16_close(dx, "rmsnorm dinp");
  expect_bf16_close(dw, "rmsnorm dweight (accumulated)");
}

// The norms with bf16 activations and f32 parameters (a bf16 run's norms): with gains and biases
// bf16 can hold, the bits of the bf16-parameter overload (the f32 parameter gradients, rounded,
// being its bf16 ones); with gains it cannot (1 + 1e-3: bf16 holds only 1), the f32 values are what
// is read — the output is the f32 overload's on the same values rounded once, not the bf16 one's.
TEST_F(CpuBf16Kernels, NormsReadF32ParametersBesideBf16Activations) {
  const std::int64_t n = 9, c = 70;
  Pair x = random_pair(n * c, 41, -2.0f, 3.0f), w = random_pair(c, 42, 0.5f, 1.5f), bias = random_pair(c, 43);
  Pair dy = random_pair(n * c, 44), r = random_pair(n * c, 45);
  std::vector<float> mean(n), rstd(n), mean_b(n), rstd_b(n);
  auto rounded_of = [](const std::vector<float>& f) {
    std::vector<float> out;
    for (float v : f) out.push_back(to_f32(from_f32<Bf16>(v)));
    return out;
  };
  {  // LayerNorm and its residual forms, representable parameters
    std::vector<Bf16> y_mixed(n * c), y_bf16(n * c), s_mixed(n * c), s_bf16(n * c);
    k_.layernorm_forward(y_mixed.data(), mean.data(), rstd.data(), x.bp(), w.fp(), bias.fp(), n, c, 1e-5f);
    k_.layernorm_forward(y_bf16.data(), mean_b.data(), rstd_b.data(), x.bp(), w.bp(), bias.bp(), n, c, 1e-5f);
    expect_bit_equal(widened(y_mixed), widened(y_bf16), "layernorm out, f32 parameters vs bf16 ones");
    expect_bit_equal(rstd, rstd_b, "layernorm rstd");
    std::vector<Bf16> dx_mixed(n * c), dx_bf16(n * c);
    std::vector<float> dw(c, 0.0f), db(c, 0.0f);
    std::vector<Bf16> dw_b(c, from_f32<Bf16>(0.0f)), db_b = dw_b;
    k_.layernorm_backward(dx_mixed.data(), dw.data(), db.data(), dy.bp(), x.bp(), w.fp(), mean.data(), rstd.data(), n,
                          c);
    k_.layernorm_backward(dx_bf16.data(), dw_b.data(), db_b.data(), dy.bp(), x.bp(), w.bp(), mean_b.data(),
                          rstd_b.data(), n, c);
    expect_bit_equal(widened(dx_mixed), widened(dx_bf16), "layernorm dinp");
    expect_bit_equal(rounded_of(dw), widened(dw_b), "layernorm dweight, f32 rounded vs bf16");
    expect_bit_equal(rounded_of(db), widened(db_b), "layernorm dbias, f32 rounded vs bf16");
    k_.residual_layernorm_forward(s_mixed.data(), y_mixed.data(), mean.data(), rstd.data(), x.bp(), r.bp(), w.fp(),
                                  bias.fp(), n, c, 1e-5f);
    k_.residual_layernorm_forward(s_bf16.data(), y_bf16.data(), mean_b.data(), rstd_b.data(), x.bp(), r.bp(), w.bp(),
                                  bias.bp(), n, c, 1e-5f);
    expect_bit_equal(widened(y_mixed), widened(y_bf16), "residual layernorm out");
    std::fill(dw.begin(), dw.end(), 0.0f);
    std::fill(db.begin(), db.end(), 0.0f);
    std::fill(dw_b.begin(), dw_b.end(), from_f32<Bf16>(0.0f));
    std::fill(db_b.begin(), db_b.end(), from_f32<Bf16>(0.0f));
    k_.residual_layernorm_backward(dx_mixed.data(), dw.data(), db.data(), dy.bp(), r.bp(), s_mixed.data(), w.fp(),
                                   mean.data(), rstd.data(), n, c);
    k_.residual_layernorm_backward(dx_bf16.data(), dw_b.data(), db_b.data(), dy.bp(), r.bp(), s_bf16.data(), w.bp(),
                                   mean_b.data(), rstd_b.data(), n, c);
    expect_bit_equal(widened(dx_mixed), widened(dx_bf16), "residual layernorm dinp");
    expect_bit_equal(rounded_of(dw), widened(dw_b), "residual layernorm dweight");
  }
  {  // RMSNorm, representable gains
    std::vector<Bf16> y_mixed(n * c), y_bf16(n * c), dx_mixed(n * c), dx_bf16(n * c);
    k_.rmsnorm_forward(y_mixed.data(), rstd.data(), x.bp(), w.fp(), n, c, 1e-5f);
    k_.rmsnorm_forward(y_bf16.data(), rstd_b.data(), x.bp(), w.bp(), n, c, 1e-5f);
    expect_bit_equal(widened(y_mixed), widened(y_bf16), "rmsnorm out");
    std::vector<float> dw(c, 0.0f);
    std::vector<Bf16> dw_b(c, from_f32<Bf16>(0.0f));
    k_.rmsnorm_backward(dx_mixed.data(), dw.data(), dy.bp(), x.bp(), w.fp(), rstd.data(), n, c);
    k_.rmsnorm_backward(dx_bf16.data(), dw_b.data(), dy.bp(), x.bp(), w.bp(), rstd_b.data(), n, c);
    expect_bit_equal(widened(dx_mixed), widened(dx_bf16), "rmsnorm dinp");
    expect_bit_equal(rounded_of(dw), widened(dw_b), "rmsnorm dweight");
  }
  {  // gains bf16 cannot hold: the f32 values are read
    std::vector<float> gain(c, 1.001f), zero(c, 0.0f);
    std::vector<Bf16> gain_b(c, from_f32<Bf16>(1.001f)), zero_b(c, from_f32<Bf16>(0.0f));
    ASSERT_EQ(to_f32(gain_b[0]), 1.0f);
    Pair y = zeros(n * c);
    std::vector<Bf16> y_bf16(n * c);
    k_.layernorm_forward(y.bp(), mean.data(), rstd.data(), x.bp(), gain.data(), zero.data(), n, c, 1e-5f);
    k_.layernorm_forward(y.fp(), mean_b.data(), rstd_b.data(), x.fp(), gain.data(), zero.data(), n, c, 1e-5f);
    expect_bf16_close(y, "layernorm out with f32 gains 1.001 vs the f32 overload");
    k_.layernorm_forward(y_bf16.data(), mean.data(), rstd.data(), x.bp(), gain_b.data(), zero_b.data(), n, c, 1e-5f);
    int differ = 0;
    for (std::int64_t i = 0; i < n * c; ++i) differ += y.b[i].bits != y_bf16[i].bits;
    EXPECT_GT(differ, n * c / 10) << "f32 gains of 1.001 gave the outputs of bf16 gains of 1";
    k_.rmsnorm_forward(y.bp(), rstd.data(), x.bp(), gain.data(), n, c, 1e-5f);
    k_.rmsnorm_forward(y.fp(), rstd_b.data(), x.fp(), gain.data(), n, c, 1e-5f);
    expect_bf16_close(y, "rmsnorm out with f32 gains 1.001 vs the f32 overload");
  }
}

TEST_F(CpuBf16Kernels, AttentionForwardAndBackward) {
  // T over two query blocks and two key blocks; head size 16.
  const std::int64_t b = 2, t = 140, nh = 2, c = 32;
  Pair qkv = random_pair(b * t * 3 * c, 37, -2.0f, 2.0f), out = zeros(b * t * c);
  std::vector<float> lse(b * nh * t), lse_b(b * nh * t), delta(b * nh * t);
  k_.attention_forward(out.fp(), lse.data(), qkv.fp(), b, t, c, nh, nullptr);
  k_.attention_forward(out.bp(), lse_b.data(), qkv.bp(), b, t, c, nh, nullptr);
  expect_bf16_close(out, "attention out");
  test::expect_close(lse_b, as_double(lse), kF32Tolerance, "attention lse (f32, from the same q and k)");
  Pair dout = random_pair(b * t * c, 38), dqkv = zeros(b * t * 3 * c);
  Pair out_used = rounded(out.f);  // backward reads the forward's out: both read the same values
  k_.attention_backward(dqkv.fp(), delta.data(), dout.fp(), qkv.fp(), out_used.fp(), lse.data(), b, t, c, nh, nullptr);
  k_.attention_backward(dqkv.bp(), delta.data(), dout.bp(), qkv.bp(), out_used.bp(), lse.data(), b, t, c, nh, nullptr);
  expect_bf16_close(dqkv, "attention dqkv");
}

TEST_F(CpuBf16Kernels, CrossEntropyOverSeveralBlocks) {
  const std::int64_t n = 6, v = 3000;  // past one 2048-logit block
  Pair logits = random_pair(n * v, 39, -5.0f, 5.0f);
  std::vector<std::int32_t> targets(n);
  for (std::int64_t i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>((i * 977) % v);
  std::vector<float> losses(n), lse(n), losses_b(n), lse_b(n);
  k_.cross_entropy_forward(losses.data(), lse.data(), logits.fp(), targets.data(), n, v);
  k_.cross_entropy_forward(losses_b.data(), lse_b.data(), logits.bp(), targets.data(), n, v);
  expect_bit_equal(losses_b, losses, "losses (the same f32 arithmetic on the same values)");
  expect_bit_equal(lse_b, lse, "log-sum-exp");
  k_.cross_entropy_backward(logits.fp(), logits.fp(), lse.data(), targets.data(), 0.25f, n, v);
  k_.cross_entropy_backward(logits.bp(), logits.bp(), lse.data(), targets.data(), 0.25f, n, v);
  expect_bf16_close(logits, "dlogits (in place)");
  for (std::int64_t i = 0; i < n; ++i) {  // the target's (p - 1) * dloss is rounded once
    const std::size_t at = static_cast<std::size_t>(i * v + targets[i]);
    EXPECT_NEAR(to_f32(logits.b[at]), logits.f[at], std::fabs(logits.f[at]) * 1.0 / 256) << "row " << i;
  }
}

TEST_F(CpuBf16Kernels, VocabularyShardedEmbeddingAndCrossEntropy) {
  const std::int64_t b = 3, t = 7, c = 2000, vocab = 11, first = 4, rows = 4;  // a team of threads
  std::vector<std::int32_t> tokens(b * t);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 5) % vocab);
  Pair wte = random_pair(rows * c, 42), wpe = random_pair(t * c, 43), out = zeros(b * t * c);
  k_.embedding_shard_forward(out.fp(), tokens.data(), wte.fp(), wpe.fp(), b, t, c, first, rows, vocab);
  k_.embedding_shard_forward(out.bp(), tokens.data(), wte.bp(), wpe.bp(), b, t, c, first, rows, vocab);
  expect_rounded_once(out, "embedding shard forward");
  Pair dout = random_pair(b * t * c, 44), dwte = random_pair(rows * c, 45), dwpe = random_pair(t * c, 46);
  k_.embedding_shard_backward(dwte.fp(), dwpe.fp(), dout.fp(), tokens.data(), b, t, c, first, rows, vocab);
  k_.embedding_shard_backward(dwte.bp(), dwpe.bp(), dout.bp(), tokens.data(), b, t, c, first, rows, vocab);
  expect_bf16_close(dwte, "embedding shard dwte (accumulated)");
  expect_bf16_close(dwpe, "embedding shard dwpe (accumulated)");

  const std::int64_t n = 6, v = 3000, ce_first = 1000, ce_vocab = 5000;  // past one 2048-logit block
  Pair logits = random_pair(n * v, 47, -5.0f, 5.0f);
  std::vector<std::int32_t> targets(n);
  for (std::int64_t i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>((i * 977) % ce_vocab);
  std::vector<float> lse(n), tl(n), lse_b(n), tl_b(n);
  k_.cross_entropy_shard_forward(lse.data(), tl.data(), logits.fp(), targets.data(), n, v, ce_first, ce_vocab);
  k_.cross_entropy_shard_forward(lse_b.data(), tl_b.data(), logits.bp(), targets.data(), n, v, ce_first, ce_vocab);
  expect_bit_equal(lse_b, lse, "shard lse (the same f32 arithmetic on the same values)");
  expect_bit_equal(tl_b, tl, "shard target logits");
  k_.cross_entropy_shard_backward(logits.fp(), logits.fp(), lse.data(), targets.data(), 0.25f, n, v, ce_first);
  k_.cross_entropy_shard_backward(logits.bp(), logits.bp(), lse.data(), targets.data(), 0.25f, n, v, ce_first);
  expect_bf16_close(logits, "shard dlogits (in place)");
}

TEST_F(CpuBf16Kernels, AddBf16AccumulatesIntoF32WithTheNormsPass) {
  const std::int64_t n = 100003;
  const std::vector<float> acc = random_floats(n, 40);
  Pair g = random_pair(n, 41);
  std::vector<float> out(n), expected(n);
  for (std::int64_t i = 0; i < n; ++i) expected[i] = acc[i] + g.f[i];
  double squares = -1.0, reference = -1.0;
  k_.add_bf16(out.data(), acc.data(), g.bp(), n, &squares);
  expect_bit_equal(out, expected, "add_bf16 (f32 sums of the widened values)");
  k_.sum_squares(expected.data(), n, &reference);
  EXPECT_EQ(squares, reference) << "its sum of squares is sum_squares' of the result";
  std::vector<float> in_place = acc;
  k_.add_bf16(in_place.data(), in_place.data(), g.bp(), n, nullptr);
  expect_bit_equal(in_place, expected, "add_bf16 in place, no norm");
}

TEST_F(CpuBf16Kernels, ResultsDoNotDependOnTheThreadCount) {
  const std::int64_t m = 300, n = 200, k = 300, b = 1, t = 256, nh = 4, c = 64;
  Pair a = random_pair(m * k, 42), bm = random_pair(k * n, 43), qkv = random_pair(b * t * 3 * c, 44);
  Pair dout = random_pair(b * t * c, 45), rows = random_pair(t * 256, 46);
  std::vector<float> lse(b * nh * t), delta(b * nh * t);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    with_threads(threads, [&] {
      std::vector<Bf16> cm(m * n), out(b * t * c), dqkv(b * t * 3 * c);
      k_.gemm(false, true, m, n, k, 1.0f, a.bp(), k, bm.bp(), k, 0.0f, cm.data(), n);
      k_.attention_forward(out.data(), lse.data(), qkv.bp(), b, t, c, nh, nullptr);
      k_.attention_backward(dqkv.data(), delta.data(), dout.bp(), qkv.bp(), out.data(), lse.data(), b, t, c, nh,
                            nullptr);
      std::vector<std::int32_t> tokens(t);  // 256 rows of 256 channels: past the kernel's one-thread size
      for (std::int64_t i = 0; i < t; ++i) tokens[i] = static_cast<std::int32_t>((i * 7) % 50);
      std::vector<Bf16> dwte(50 * 256, from_f32<Bf16>(0.0f));
      k_.embedding_backward(dwte.data(), nullptr, rows.bp(), tokens.data(), 1, t, 256, 50);
      std::vector<float> all = widened(cm);
      for (Bf16 x : dqkv) all.push_back(to_f32(x));
      for (Bf16 x : dwte) all.push_back(to_f32(x));
      runs.push_back(all);
    });
  }
  expect_bit_equal(runs[1], runs[0], "bf16 gemm, attention and embedding backward at 2 threads vs 1");
}

}  // namespace
}  // namespace tessera
