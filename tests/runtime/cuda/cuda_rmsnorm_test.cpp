// CudaKernels RMSNorm against CpuKernels: forward (out, rstd) and backward (dinp written, dweight
// accumulated) for c below, at and above a warp's width and n spanning several row groups, within
// the f32 tolerance (kF32Tolerance of the largest expected value: the row sums and the weight
// gradient's column sums are added in another order than the CPU's); dinp may alias dout; dweight
// is the same bits on every run; bf16 tensors through the typed launchers within the bf16 tolerance.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::describe;
using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaRmsNorm : public test::CudaKernelTest {};

constexpr float kRmsNormEps = 1e-5f;

TEST_F(CudaRmsNorm, ForwardAndBackwardMatchCpu) {
  for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {7, 37}, {33, 768}, {600, 100}}) {
    const auto inp = random_floats(n * c, 1, -2.0f, 3.0f), w = random_floats(c, 2);
    const auto dout = random_floats(n * c, 4);
    auto dw = random_floats(c, 5);  // accumulated into
    std::vector<float> out(n * c), rstd(n), dinp(n * c);
    DeviceBuffer<float> g_inp(inp), g_w(w), g_dout(dout), g_dw(dw);
    DeviceBuffer<float> g_out(n * c), g_rstd(n), g_dinp(n * c);
    gpu_->rmsnorm_forward(g_out.get(), g_rstd.get(), g_inp.get(), g_w.get(), n, c, kRmsNormEps);
    cpu_.rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), n, c, kRmsNormEps);
    const std::string label = "rmsnorm f32 " + describe(n, c);
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    expect_close(g_rstd.download(), rstd, kF32Tolerance, label + " forward rstd");
    gpu_->rmsnorm_backward(g_dinp.get(), g_dw.get(), g_dout.get(), g_inp.get(), g_w.get(), g_rstd.get(), n, c);
    cpu_.rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), n, c);
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp");
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " backward dweight (accumulated)");
  }
}

TEST_F(CudaRmsNorm, BackwardInPlaceOverDout) {
  const std::int64_t n = 45, c = 70;
  const auto inp = random_floats(n * c, 11), w = random_floats(c, 12), dout = random_floats(n * c, 14);
  std::vector<float> out(n * c), rstd(n), dinp(n * c), dw(c, 0.0f);
  cpu_.rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), n, c, kRmsNormEps);
  cpu_.rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), n, c);
  DeviceBuffer<float> g_inp(inp), g_w(w), g_rstd(rstd), g_dout(dout), g_dw(std::vector<float>(c, 0.0f));
  gpu_->rmsnorm_backward(g_dout.get(), g_dw.get(), g_dout.get(), g_inp.get(), g_w.get(), g_rstd.get(), n, c);
  const std::string label = "rmsnorm f32 " + describe(n, c) + " backward with dinp aliasing dout";
  expect_close(g_dout.download(), dinp, kF32Tolerance, label + " dinp");
  expect_close(g_dw.download(), dw, kF32Tolerance, label + " dweight");
}

TEST_F(CudaRmsNorm, WeightGradIsTheSameBitsEveryRun) {
  const std::int64_t n = 5000, c = 96;
  const auto inp = random_floats(n * c, 21), w = random_floats(c, 22), dout = random_floats(n * c, 23);
  std::vector<float> rstd(n), out(n * c);
  cpu_.rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), n, c, kRmsNormEps);
  std::vector<std::vector<float>> dw_runs, dinp_runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> g_inp(inp), g_w(w), g_rstd(rstd), g_dout(dout), g_dinp(n * c);
    DeviceBuffer<float> g_dw(std::vector<float>(c, 0.0f));
    gpu_->rmsnorm_backward(g_dinp.get(), g_dw.get(), g_dout.get(), g_inp.get(), g_w.get(), g_rstd.get(), n, c);
    dw_runs.push_back(g_dw.download());
    dinp_runs.push_back(g_dinp.download());
  }
  test::expect_same_bits(dw_runs[1], dw_runs[0], "rmsnorm_backward f32 " + describe(n, c) + " dweight, run 2 vs 1");
  test::expect_same_bits(dinp_runs[1], dinp_runs[0], "rmsnorm_backward f32 " + describe(n, c) + " dinp, run 2 vs 1");
}

TEST_F(CudaRmsNorm, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 19, c = 200;
  const auto inp = test::round_to_bf16(random_floats(n * c, 31, -2.0f, 3.0f));
  const auto w = test::round_to_bf16(random_floats(c, 32));
  const auto dout = test::round_to_bf16(random_floats(n * c, 34));
  std::vector<float> out(n * c), rstd(n), dinp(n * c), dw(c, 0.0f);
  cpu_.rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), n, c, kRmsNormEps);
  cpu_.rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), n, c);
  DeviceBuffer<__nv_bfloat16> g_inp(test::to_bf16(inp)), g_w(test::to_bf16(w)), g_dout(test::to_bf16(dout));
  DeviceBuffer<__nv_bfloat16> g_out(n * c), g_dinp(n * c), g_dw(test::to_bf16(std::vector<float>(c, 0.0f)));
  DeviceBuffer<float> g_rstd(n);
  const std::size_t scratch_floats = detail::column_sum_scratch_floats(n, c, 1);
  DeviceBuffer<float> scratch(scratch_floats);
  detail::launch_rmsnorm_forward(g_out.get(), g_rstd.get(), g_inp.get(), g_w.get(), n, c, kRmsNormEps, stream_);
  detail::launch_rmsnorm_backward(g_dinp.get(), g_dw.get(), g_dout.get(), g_inp.get(), g_w.get(), g_rstd.get(), n, c,
                                  scratch.get(), scratch_floats, stream_);
  const std::string label = "rmsnorm bf16 " + describe(n, c);
  expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, label + " forward out");
  expect_close(g_rstd.download(), rstd, kBf16Tolerance, label + " forward rstd");
  expect_close(test::from_bf16(g_dinp.download()), dinp, kBf16Tolerance, label + " backward dinp");
  expect_close(test::from_bf16(g_dw.download()), dw, kBf16Tolerance, label + " backward dweight");
}

}  // namespace
}  // namespace tessera
