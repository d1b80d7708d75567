// CudaKernels::gemm and the linear layer against CpuKernels: every transpose combination with
// padded strides (padding untouched), k == 0, the TF32 and bf16 tensor-core arithmetics within their
// tolerances, bf16 tensors through the typed launchers, linear forward with and without bias on
// shapes cuBLASLt's bias epilogue takes and odd ones, linear backward with accumulation and null
// outputs, a bias gradient that is the same bits on every run, and the fused linear + GELU forward
// and backward (dout overwritten with the GELU input's gradient).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaGemm : public test::CudaKernelTest {};

struct GemmShape {
  std::int64_t m, n, k, pad;
};

std::string describe(const GemmShape& s, bool ta, bool tb) {
  return "(m=" + std::to_string(s.m) + ",n=" + std::to_string(s.n) + ",k=" + std::to_string(s.k) +
         ",pad=" + std::to_string(s.pad) + ",trans_a=" + std::to_string(ta) + ",trans_b=" + std::to_string(tb) + ")";
}

// Runs one gemm of shape s on the GPU (in its current GemmMath) and on the CPU and compares c.
void check_gemm(const CudaKernels& gpu, const CpuKernels& cpu, const GemmShape& s, bool ta, bool tb, double tol,
                const std::string& label, std::uint32_t seed) {
  const std::int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const std::int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const std::int64_t lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
  const auto a = random_floats(a_rows * lda, seed);
  const auto b = random_floats(b_rows * ldb, seed + 1);
  auto c = random_floats(s.m * ldc, seed + 2);
  const float alpha = 0.75f, beta = -0.5f;
  DeviceBuffer<float> da(a), db(b), dc(c);
  gpu.gemm(ta, tb, s.m, s.n, s.k, alpha, da.get(), lda, db.get(), ldb, beta, dc.get(), ldc);
  cpu.gemm(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  expect_close(dc.download(), c, tol, label + " " + describe(s, ta, tb) + " c");
}

TEST_F(CudaGemm, AllTransposesWithStridesMatchCpu) {
  for (const GemmShape& s : {GemmShape{5, 7, 9, 3}, GemmShape{67, 45, 129, 1}, GemmShape{1, 33, 17, 0}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) check_gemm(*gpu_, cpu_, s, ta, tb, kF32Tolerance, "gemm f32", 11);
    }
  }
}

TEST_F(CudaGemm, TensorCoreArithmeticsStayWithinTheirTolerances) {
  const GemmShape s{96, 80, 256, 0};
  gpu_->set_gemm_math(GemmMath::kTf32);
  EXPECT_EQ(gpu_->gemm_math(), GemmMath::kTf32);
  check_gemm(*gpu_, cpu_, s, false, true, kTf32Tolerance, "gemm f32 (GemmMath tf32)", 21);
  gpu_->set_gemm_math(GemmMath::kBf16);
  check_gemm(*gpu_, cpu_, s, true, false, kBf16Tolerance, "gemm f32 (GemmMath bf16)", 22);
}

TEST_F(CudaGemm, ZeroInnerDimensionScalesC) {
  DeviceBuffer<float> c(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
  gpu_->gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.get(), 2);
  EXPECT_EQ(c.download(), (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f})) << "gemm f32 (m=2,n=2,k=0) beta=0.5";
  gpu_->gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.get(), 2);
  EXPECT_EQ(c.download(), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f})) << "gemm f32 (m=2,n=2,k=0) beta=0";
}

TEST_F(CudaGemm, Bf16TensorsMatchCpuOnRoundedInputs) {
  const std::int64_t m = 37, n = 29, k = 70;
  const auto a = test::round_to_bf16(random_floats(m * k, 31));
  const auto b = test::round_to_bf16(random_floats(n * k, 32));
  auto c = test::round_to_bf16(random_floats(m * n, 33));
  DeviceBuffer<__nv_bfloat16> da(test::to_bf16(a)), db(test::to_bf16(b)), dc(test::to_bf16(c));
  CublasContext blas(0, stream_);
  detail::launch_gemm(blas, GemmMath::kF32, false, true, m, n, k, 1.0f, da.get(), k, db.get(), k, 1.0f, dc.get(), n);
  cpu_.gemm(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 1.0f, c.data(), n);
  expect_close(test::from_bf16(dc.download()), c, kBf16Tolerance, "gemm bf16 (m=37,n=29,k=70,trans_b) c");
}

struct LinearShape {
  std::int64_t n, c, oc;
};

std::string describe(const LinearShape& s) {
  return "(n=" + std::to_string(s.n) + ",c=" + std::to_string(s.c) + ",oc=" + std::to_string(s.oc) + ")";
}

TEST_F(CudaGemm, LinearForwardMatchesCpuWithAndWithoutBias) {
  // 128x64x96 is aligned for the cuBLASLt bias epilogue; the others may take the fallback.
  for (const LinearShape& s : {LinearShape{128, 64, 96}, LinearShape{37, 45, 29}, LinearShape{1, 3, 5}}) {
    const auto inp = random_floats(s.n * s.c, 41), w = random_floats(s.oc * s.c, 42), bias = random_floats(s.oc, 43);
    DeviceBuffer<float> dinp(inp), dw(w), dbias(bias), dout(s.n * s.oc);
    std::vector<float> out(s.n * s.oc);
    gpu_->linear_forward(dout.get(), dinp.get(), dw.get(), dbias.get(), s.n, s.c, s.oc);
    cpu_.linear_forward(out.data(), inp.data(), w.data(), bias.data(), s.n, s.c, s.oc);
    expect_close(dout.download(), out, kF32Tolerance, "linear_forward f32 " + describe(s) + " out (with bias)");
    gpu_->linear_forward(dout.get(), dinp.get(), dw.get(), nullptr, s.n, s.c, s.oc);
    cpu_.linear_forward(out.data(), inp.data(), w.data(), nullptr, s.n, s.c, s.oc);
    expect_close(dout.download(), out, kF32Tolerance, "linear_forward f32 " + describe(s) + " out (no bias)");
  }
}

TEST_F(CudaGemm, LinearGeluForwardAndBackwardMatchCpu) {
  for (const LinearShape& s : {LinearShape{128, 64, 96}, LinearShape{37, 45, 29}}) {
    const auto inp = random_floats(s.n * s.c, 71), w = random_floats(s.oc * s.c, 72), bias = random_floats(s.oc, 73);
    const auto dout = random_floats(s.n * s.oc, 74);
    auto dw = random_floats(s.oc * s.c, 75), db = random_floats(s.oc, 76);  // accumulated into
    std::vector<float> out(s.n * s.oc), pre(s.n * s.oc), dinp(s.n * s.c), dpre = dout;
    DeviceBuffer<float> g_inp(inp), g_w(w), g_bias(bias), g_out(s.n * s.oc), g_pre(s.n * s.oc);
    DeviceBuffer<float> g_dout(dout), g_dw(dw), g_db(db), g_dinp(s.n * s.c);
    gpu_->linear_gelu_forward(g_out.get(), g_pre.get(), g_inp.get(), g_w.get(), g_bias.get(), s.n, s.c, s.oc);
    cpu_.linear_gelu_forward(out.data(), pre.data(), inp.data(), w.data(), bias.data(), s.n, s.c, s.oc);
    const std::string label = "linear_gelu f32 " + describe(s);
    expect_close(g_pre.download(), pre, kF32Tolerance, label + " forward pre");
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    gpu_->linear_gelu_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_pre.get(), g_inp.get(), g_w.get(),
                               s.n, s.c, s.oc);
    cpu_.linear_gelu_backward(dinp.data(), dw.data(), db.data(), dpre.data(), pre.data(), inp.data(), w.data(), s.n,
                              s.c, s.oc);
    expect_close(g_dout.download(), dpre, kF32Tolerance, label + " backward dout (now the gradient of pre)");
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp");
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " backward dweight (accumulated)");
    expect_close(g_db.download(), db, kF32Tolerance, label + " backward dbias (accumulated)");
  }
}

TEST_F(CudaGemm, LinearForwardBf16MatchesCpuOnRoundedInputs) {
  for (const LinearShape& s : {LinearShape{64, 32, 48}, LinearShape{7, 45, 29}}) {
    const auto inp = test::round_to_bf16(random_floats(s.n * s.c, 51));
    const auto w = test::round_to_bf16(random_floats(s.oc * s.c, 52));
    const auto bias = test::round_to_bf16(random_floats(s.oc, 53));
    DeviceBuffer<__nv_bfloat16> dinp(test::to_bf16(inp)), dw(test::to_bf16(w)), dbias(test::to_bf16(bias));
    DeviceBuffer<__nv_bfloat16> dout(s.n * s.oc);
    CublasContext blas(0, stream_);
    detail::launch_linear_forward(blas, GemmMath::kF32, dout.get(), dinp.get(), dw.get(), dbias.get(), s.n, s.c, s.oc);
    std::vector<float> out(s.n * s.oc);
    cpu_.linear_forward(out.data(), inp.data(), w.data(), bias.data(), s.n, s.c, s.oc);
    expect_close(test::from_bf16(dout.download()), out, kBf16Tolerance, "linear_forward bf16 " + describe(s) + " out");
  }
}

TEST_F(CudaGemm, LinearBackwardMatchesCpuAndAccumulates) {
  for (const LinearShape& s : {LinearShape{1000, 64, 96}, LinearShape{37, 45, 29}, LinearShape{1, 3, 5}}) {
    const auto inp = random_floats(s.n * s.c, 61), w = random_floats(s.oc * s.c, 62);
    const auto dout = random_floats(s.n * s.oc, 63);
    auto dw = random_floats(s.oc * s.c, 64), db = random_floats(s.oc, 65);  // accumulated into
    std::vector<float> dinp(s.n * s.c);
    DeviceBuffer<float> g_inp(inp), g_w(w), g_dout(dout), g_dw(dw), g_db(db), g_dinp(s.n * s.c);
    gpu_->linear_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(), s.n, s.c, s.oc);
    cpu_.linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
    const std::string label = "linear_backward f32 " + describe(s);
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " dinp");
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " dweight (accumulated)");
    expect_close(g_db.download(), db, kF32Tolerance, label + " dbias (accumulated)");
    // Null dinp and dbias: only dweight accumulates (again).
    gpu_->linear_backward(nullptr, g_dw.get(), nullptr, g_dout.get(), g_inp.get(), g_w.get(), s.n, s.c, s.oc);
    cpu_.linear_backward(nullptr, dw.data(), nullptr, dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " dweight (second accumulation, null dinp/dbias)");
    expect_close(g_db.download(), db, kF32Tolerance, label + " dbias (untouched by the null call)");
  }
}

TEST_F(CudaGemm, LinearBackwardBf16MatchesCpuOnRoundedInputs) {
  const LinearShape s{300, 40, 24};
  const auto inp = test::round_to_bf16(random_floats(s.n * s.c, 71));
  const auto w = test::round_to_bf16(random_floats(s.oc * s.c, 72));
  const auto dout = test::round_to_bf16(random_floats(s.n * s.oc, 73));
  auto dw = test::round_to_bf16(random_floats(s.oc * s.c, 74));
  auto db = test::round_to_bf16(random_floats(s.oc, 75));
  std::vector<float> dinp(s.n * s.c);
  DeviceBuffer<__nv_bfloat16> g_inp(test::to_bf16(inp)), g_w(test::to_bf16(w)), g_dout(test::to_bf16(dout));
  DeviceBuffer<__nv_bfloat16> g_dw(test::to_bf16(dw)), g_db(test::to_bf16(db)), g_dinp(s.n * s.c);
  CublasContext blas(0, stream_);
  detail::launch_linear_backward(blas, GemmMath::kF32, g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(),
                                 g_w.get(), s.n, s.c, s.oc);
  cpu_.linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.n, s.c, s.oc);
  const std::string label = "linear_backward bf16 " + describe(s);
  expect_close(test::from_bf16(g_dinp.download()), dinp, kBf16Tolerance, label + " dinp");
  expect_close(test::from_bf16(g_dw.download()), dw, kBf16Tolerance, label + " dweight");
  expect_close(test::from_bf16(g_db.download()), db, kBf16Tolerance, label + " dbias");
}

TEST_F(CudaGemm, BiasGradIsTheSameBitsEveryRun) {
  const LinearShape s{4099, 16, 70};  // many row groups, a partial column slice
  const auto inp = random_floats(s.n * s.c, 81), w = random_floats(s.oc * s.c, 82);
  const auto dout = random_floats(s.n * s.oc, 83);
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> g_inp(inp), g_w(w), g_dout(dout), g_dw(std::vector<float>(s.oc * s.c, 0.0f));
    DeviceBuffer<float> g_db(std::vector<float>(s.oc, 0.0f));
    gpu_->linear_backward(nullptr, g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(), s.n, s.c, s.oc);
    runs.push_back(g_db.download());
  }
  test::expect_same_bits(runs[1], runs[0], "linear_backward f32 " + describe(s) + " dbias, second run vs first");
}

}  // namespace
}  // namespace tessera
