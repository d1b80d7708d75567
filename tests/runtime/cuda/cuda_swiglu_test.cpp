// CudaKernels SwiGLU against CpuKernels: forward (out) and backward (dinp = [dgate | dup] written;
// it starts as NaN, so an element left unwritten fails) for one element, odd widths and a size
// beyond a grid-stride loop's first pass, gates spanning silu's clamped range, within the f32
// tolerance (kF32Tolerance of the largest expected value); bf16 tensors through the typed launchers
// within the bf16 tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaSwiglu : public test::CudaKernelTest {};

std::string describe_rows(std::int64_t n, std::int64_t f) {
  return "(n=" + std::to_string(n) + ",f=" + std::to_string(f) + ")";
}

TEST_F(CudaSwiglu, ForwardAndBackwardMatchCpu) {
  // The last shape has n * f = 2^24 + 4098 outputs: more than one pass of the grid-stride loop.
  for (auto [n, f] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 37}, {300, 1000}, {4097, 4098}}) {
    const auto inp = random_floats(n * 2 * f, 1, -8.0f, 8.0f), dout = random_floats(n * f, 2);
    std::vector<float> out(n * f), dinp(n * 2 * f);
    cpu_.swiglu_forward(out.data(), inp.data(), n, f);
    cpu_.swiglu_backward(dinp.data(), dout.data(), inp.data(), n, f);
    DeviceBuffer<float> g_inp(inp), g_dout(dout), g_out(n * f), g_dinp(std::vector<float>(n * 2 * f, NAN));
    gpu_->swiglu_forward(g_out.get(), g_inp.get(), n, f);
    gpu_->swiglu_backward(g_dinp.get(), g_dout.get(), g_inp.get(), n, f);
    const std::string label = "swiglu f32 " + describe_rows(n, f);
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp");
  }
}

TEST_F(CudaSwiglu, GatesBeyondTheClampedRangeMatchCpu) {
  const std::int64_t n = 3, f = 8;
  std::vector<float> inp(n * 2 * f, 1.5f);
  const float gates[] = {-200.0f, -88.5f, -87.0f, -20.0f, 20.0f, 87.0f, 88.5f, 200.0f};
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < f; ++j) inp[i * 2 * f + j] = gates[j];
  }
  const auto dout = random_floats(n * f, 3);
  std::vector<float> out(n * f), dinp(n * 2 * f);
  cpu_.swiglu_forward(out.data(), inp.data(), n, f);
  cpu_.swiglu_backward(dinp.data(), dout.data(), inp.data(), n, f);
  DeviceBuffer<float> g_inp(inp), g_dout(dout), g_out(n * f), g_dinp(n * 2 * f);
  gpu_->swiglu_forward(g_out.get(), g_inp.get(), n, f);
  gpu_->swiglu_backward(g_dinp.get(), g_dout.get(), g_inp.get(), n, f);
  const std::string label = "swiglu f32 " + describe_rows(n, f) + " gates in [-200, 200]";
  expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
  expect_close(g_dinp.download(), dinp, kF32Tolerance, label + " backward dinp");
}

TEST_F(CudaSwiglu, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 13, f = 315;
  const auto inp = test::round_to_bf16(random_floats(n * 2 * f, 21, -6.0f, 6.0f));
  const auto dout = test::round_to_bf16(random_floats(n * f, 22));
  std::vector<float> out(n * f), dinp(n * 2 * f);
  cpu_.swiglu_forward(out.data(), inp.data(), n, f);
  cpu_.swiglu_backward(dinp.data(), dout.data(), inp.data(), n, f);
  DeviceBuffer<__nv_bfloat16> g_inp(test::to_bf16(inp)), g_dout(test::to_bf16(dout)), g_out(n * f), g_dinp(n * 2 * f);
  detail::launch_swiglu_forward(g_out.get(), g_inp.get(), n, f, stream_);
  detail::launch_swiglu_backward(g_dinp.get(), g_dout.get(), g_inp.get(), n, f, stream_);
  const std::string label = "swiglu bf16 " + describe_rows(n, f);
  expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, label + " forward out");
  expect_close(test::from_bf16(g_dinp.download()), dinp, kBf16Tolerance, label + " backward dinp");
}

}  // namespace
}  // namespace tessera
