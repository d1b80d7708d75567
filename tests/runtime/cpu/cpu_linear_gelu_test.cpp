// CpuKernels linear + GELU: the fused forward and backward give the same bits as the unfused
// composition (linear_forward + gelu_forward; gelu_backward + linear_backward) — with and without
// bias, with the parameter gradients accumulating over two calls, with a null dinp — and the bias
// gradient of the fused pass is the same bits on 1 and 2 threads.
#include <gtest/gtest.h>

#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::expect_bit_equal;
using test::random_floats;

struct Shape {
  std::int64_t n, c, oc;
};

// Shapes with widths that are not multiples of the vector width nor of the 64-column block, and
// one large enough for the OpenMP loops to run in parallel.
const Shape kShapes[] = {{5, 7, 19}, {33, 16, 130}, {300, 24, 96}};

TEST(CpuLinearGelu, ForwardIsTheComposition) {
  CpuKernels k;
  for (const Shape& s : kShapes) {
    for (bool with_bias : {true, false}) {
      const auto inp = random_floats(s.n * s.c, 1, -2.0f, 2.0f);
      const auto w = random_floats(s.oc * s.c, 2);
      const auto b = random_floats(s.oc, 3);
      const float* bias = with_bias ? b.data() : nullptr;
      std::vector<float> pre(s.n * s.oc), out(s.n * s.oc), pre_ref(s.n * s.oc), out_ref(s.n * s.oc);
      k.linear_gelu_forward(out.data(), pre.data(), inp.data(), w.data(), bias, s.n, s.c, s.oc);
      k.linear_forward(pre_ref.data(), inp.data(), w.data(), bias, s.n, s.c, s.oc);
      k.gelu_forward(out_ref.data(), pre_ref.data(), s.n * s.oc);
      const std::string where =
          "n=" + std::to_string(s.n) + " oc=" + std::to_string(s.oc) + (with_bias ? " with bias" : " no bias");
      expect_bit_equal(pre, pre_ref, "pre-activation, " + where);
      expect_bit_equal(out, out_ref, "GELU output, " + where);
    }
  }
}

TEST(CpuLinearGelu, BackwardIsTheCompositionAndAccumulates) {
  CpuKernels k;
  for (const Shape& s : kShapes) {
    const auto inp = random_floats(s.n * s.c, 11, -2.0f, 2.0f);
    const auto w = random_floats(s.oc * s.c, 12);
    const auto pre = random_floats(s.n * s.oc, 13, -4.0f, 4.0f);
    const auto dout = random_floats(s.n * s.oc, 14);
    std::vector<float> dinp(s.n * s.c), dw(s.oc * s.c, 0.25f), db(s.oc, -0.5f);
    std::vector<float> dinp_ref(s.n * s.c), dw_ref = dw, db_ref = db;
    for (int call = 0; call < 2; ++call) {  // the second call accumulates into dweight and dbias
      std::vector<float> d = dout, d_ref = dout;
      k.linear_gelu_backward(dinp.data(), dw.data(), db.data(), d.data(), pre.data(), inp.data(), w.data(), s.n, s.c,
                             s.oc);
      k.gelu_backward(d_ref.data(), pre.data(), d_ref.data(), s.n * s.oc);
      k.linear_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), d_ref.data(), inp.data(), w.data(), s.n, s.c,
                        s.oc);
      const std::string where =
          "n=" + std::to_string(s.n) + " oc=" + std::to_string(s.oc) + ", call " + std::to_string(call + 1);
      expect_bit_equal(d, d_ref, "d pre (written into dout), " + where);
      expect_bit_equal(dinp, dinp_ref, "dinp, " + where);
      expect_bit_equal(dw, dw_ref, "dweight, " + where);
      expect_bit_equal(db, db_ref, "dbias, " + where);
    }
  }
}

TEST(CpuLinearGelu, NullInputAndBiasGradientsAreAllowed) {
  CpuKernels k;
  const Shape s{9, 8, 70};
  const auto inp = random_floats(s.n * s.c, 21);
  const auto w = random_floats(s.oc * s.c, 22);
  const auto pre = random_floats(s.n * s.oc, 23);
  std::vector<float> d = random_floats(s.n * s.oc, 24), d_ref = d;
  std::vector<float> dw(s.oc * s.c, 0.0f), dw_ref = dw;
  k.linear_gelu_backward(nullptr, dw.data(), nullptr, d.data(), pre.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  k.gelu_backward(d_ref.data(), pre.data(), d_ref.data(), s.n * s.oc);
  k.linear_backward(nullptr, dw_ref.data(), nullptr, d_ref.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  expect_bit_equal(d, d_ref, "d pre without dinp and dbias");
  expect_bit_equal(dw, dw_ref, "dweight without dinp and dbias");
}

TEST(CpuLinearGelu, BiasGradIsBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t n = 1024, c = 8, oc = 200;
  const auto inp = random_floats(n * c, 30);
  const auto w = random_floats(oc * c, 31);
  const auto pre = random_floats(n * oc, 32, -3.0f, 3.0f);
  const auto dout = random_floats(n * oc, 33);
  auto run = [&](int threads) {
    std::vector<float> dw(oc * c, 0.0f), db(oc, 0.5f), d = dout;
    test::with_threads(threads, [&] {
      k.linear_gelu_backward(nullptr, dw.data(), db.data(), d.data(), pre.data(), inp.data(), w.data(), n, c, oc);
    });
    return db;
  };
  expect_bit_equal(run(1), run(2), "dbias, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
