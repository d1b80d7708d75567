// CudaKernels layernorm against CpuKernels: forward (out, mean, rstd) and backward (dinp written,
// dweight and dbias accumulated) for c below, at and above a warp's width and n spanning several
// row groups; dinp may alias dout; the parameter gradients are the same bits on every run; bf16
// tensors through the typed launchers within the bf16 tolerance; residual add + LayerNorm forward
// and backward (dinp aliasing dout) against the CPU's.
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

class CudaLayerNorm : public test::CudaKernelTest {};

constexpr float kEps = 1e-5f;

TEST_F(CudaLayerNorm, ForwardAndBackwardMatchCpu) {
  for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {7, 37}, {33, 768}, {600, 100}}) {
    const auto inp = random_floats(n * c, 1, -2.0f, 3.0f), w = random_floats(c, 2), bias = random_floats(c, 3);
    const auto dout = random_floats(n * c, 4);
    auto dw = random_floats(c, 5), db = random_floats(c, 6);  // accumulated into
    std::vector<float> out(n * c), mean(n), rstd(n), dinp(n * c);
    DeviceBuffer<float> g_inp(inp), g_w(w), g_bias(bias), g_dout(dout), g_dw(dw), g_db(db);
    DeviceBuffer<float> g_out(n * c), g_mean(n), g_rstd(n), g_dinp(n * c);
    gpu_->layernorm_forward(g_out.get(), g_mean.get(), g_rstd.get(), g_inp.get(), g_w.get(), g_bias.get(), n, c, kEps);
    cpu_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), bias.data(), n, c, kEps);
    const std::string label = "layernorm f32 " + describe(n, c);
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    expect_close(g_mean.download(), mean, kF32Tolerance, label + " forward mean");
    expect_close(g_rstd.download(), rstd, kF32Tolerance, label + " forward rstd");
    gpu_->layernorm_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(), g_mean.get(),
                             g_rstd.get(), n, c);
    cpu_.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                            rstd.data(), n, c);
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp");
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " backward dweight (accumulated)");
    expect_close(g_db.download(), db, kF32Tolerance, label + " backward dbias (accumulated)");
  }
}

TEST_F(CudaLayerNorm, BackwardInPlaceOverDout) {
  const std::int64_t n = 45, c = 70;
  const auto inp = random_floats(n * c, 11), w = random_floats(c, 12), bias = random_floats(c, 13);
  const auto dout = random_floats(n * c, 14);
  std::vector<float> out(n * c), mean(n), rstd(n), dinp(n * c), dw(c, 0.0f), db(c, 0.0f);
  cpu_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), bias.data(), n, c, kEps);
  cpu_.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                          rstd.data(), n, c);
  DeviceBuffer<float> g_inp(inp), g_w(w), g_mean(mean), g_rstd(rstd), g_dout(dout), g_dw(c), g_db(c);
  g_dw.upload(std::vector<float>(c, 0.0f));
  g_db.upload(std::vector<float>(c, 0.0f));
  gpu_->layernorm_backward(g_dout.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(), g_mean.get(),
                           g_rstd.get(), n, c);
  const std::string label = "layernorm f32 " + describe(n, c) + " backward with dinp aliasing dout";
  expect_close(g_dout.download(), dinp, kF32Tolerance, label + " dinp");
  expect_close(g_dw.download(), dw, kF32Tolerance, label + " dweight");
  expect_close(g_db.download(), db, kF32Tolerance, label + " dbias");
}

TEST_F(CudaLayerNorm, ParameterGradsAreTheSameBitsEveryRun) {
  const std::int64_t n = 5000, c = 96;
  const auto inp = random_floats(n * c, 21), w = random_floats(c, 22), dout = random_floats(n * c, 23);
  std::vector<float> mean(n), rstd(n), out(n * c);
  cpu_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), w.data(), n, c, kEps);
  std::vector<std::vector<float>> dw_runs, db_runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> g_inp(inp), g_w(w), g_mean(mean), g_rstd(rstd), g_dout(dout), g_dinp(n * c);
    DeviceBuffer<float> g_dw(std::vector<float>(c, 0.0f)), g_db(std::vector<float>(c, 0.0f));
    gpu_->layernorm_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(), g_mean.get(),
                             g_rstd.get(), n, c);
    dw_runs.push_back(g_dw.download());
    db_runs.push_back(g_db.download());
  }
  test::expect_same_bits(dw_runs[1], dw_runs[0], "layernorm_backward f32 " + describe(n, c) + " dweight, run 2 vs 1");
  test::expect_same_bits(db_runs[1], db_runs[0], "layernorm_backward f32 " + describe(n, c) + " dbias, run 2 vs 1");
}

TEST_F(CudaLayerNorm, ResidualLayerNormMatchesCpu) {
  for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{7, 37}, {600, 100}}) {
    const auto a = random_floats(n * c, 41), b = random_floats(n * c, 42);
    const auto w = random_floats(c, 43), bias = random_floats(c, 44);
    const auto dout = random_floats(n * c, 45), dres = random_floats(n * c, 46);
    auto dw = random_floats(c, 47), db = random_floats(c, 48);  // accumulated into
    std::vector<float> sum(n * c), out(n * c), mean(n), rstd(n), dinp = dout;
    DeviceBuffer<float> g_a(a), g_b(b), g_w(w), g_bias(bias), g_sum(n * c), g_out(n * c), g_mean(n), g_rstd(n);
    DeviceBuffer<float> g_dinp(dout), g_dres(dres), g_dw(dw), g_db(db);
    gpu_->residual_layernorm_forward(g_sum.get(), g_out.get(), g_mean.get(), g_rstd.get(), g_a.get(), g_b.get(),
                                     g_w.get(), g_bias.get(), n, c, kEps);
    cpu_.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                    bias.data(), n, c, kEps);
    const std::string label = "residual_layernorm f32 " + describe(n, c);
    expect_close(g_sum.download(), sum, kF32Tolerance, label + " forward sum");
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    expect_close(g_rstd.download(), rstd, kF32Tolerance, label + " forward rstd");
    // dinp aliases dout on both sides.
    gpu_->residual_layernorm_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dinp.get(), g_dres.get(), g_sum.get(),
                                      g_w.get(), g_mean.get(), g_rstd.get(), n, c);
    cpu_.residual_layernorm_backward(dinp.data(), dw.data(), db.data(), dinp.data(), dres.data(), sum.data(), w.data(),
                                     mean.data(), rstd.data(), n, c);
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp (over dout)");
    expect_close(g_dw.download(), dw, kF32Tolerance, label + " backward dweight (accumulated)");
    expect_close(g_db.download(), db, kF32Tolerance, label + " backward dbias (accumulated)");
  }
}

TEST_F(CudaLayerNorm, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 19, c = 200;
  const auto inp = test::round_to_bf16(random_floats(n * c, 31, -2.0f, 3.0f));
  const auto w = test::round_to_bf16(random_floats(c, 32)), bias = test::round_to_bf16(random_floats(c, 33));
  const auto dout = test::round_to_bf16(random_floats(n * c, 34));
  std::vector<float> out(n * c), mean(n), rstd(n), dinp(n * c), dw(c, 0.0f), db(c, 0.0f);
  cpu_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), bias.data(), n, c, kEps);
  cpu_.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                          rstd.data(), n, c);
  DeviceBuffer<__nv_bfloat16> g_inp(test::to_bf16(inp)), g_w(test::to_bf16(w)), g_bias(test::to_bf16(bias));
  DeviceBuffer<__nv_bfloat16> g_dout(test::to_bf16(dout)), g_out(n * c), g_dinp(n * c);
  const std::vector<float> zeros(c, 0.0f);  // dw and db already hold the CPU's sums
  DeviceBuffer<__nv_bfloat16> g_dw(test::to_bf16(zeros)), g_db(test::to_bf16(zeros));
  DeviceBuffer<float> g_mean(n), g_rstd(n);
  const std::size_t scratch_floats = detail::column_sum_scratch_floats(n, c, 2);
  DeviceBuffer<float> scratch(scratch_floats);
  detail::launch_layernorm_forward(g_out.get(), g_mean.get(), g_rstd.get(), g_inp.get(), g_w.get(), g_bias.get(), n, c,
                                   kEps, stream_);
  detail::launch_layernorm_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_inp.get(), g_w.get(),
                                    g_mean.get(), g_rstd.get(), n, c, scratch.get(), scratch_floats, stream_);
  const std::string label = "layernorm bf16 " + describe(n, c);
  expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, label + " forward out");
  expect_close(g_mean.download(), mean, kBf16Tolerance, label + " forward mean");
  expect_close(g_rstd.download(), rstd, kBf16Tolerance, label + " forward rstd");
  expect_close(test::from_bf16(g_dinp.download()), dinp, kBf16Tolerance, label + " backward dinp");
  expect_close(test::from_bf16(g_dw.download()), dw, kBf16Tolerance, label + " backward dweight");
  expect_close(test::from_bf16(g_db.download()), db, kBf16Tolerance, label + " backward dbias");
}

}  // namespace
}  // namespace tessera
