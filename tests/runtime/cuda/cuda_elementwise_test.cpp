// CudaKernels element-wise ops against CpuKernels: GELU forward and backward (including in place
// over dout), add (out aliasing a or b) and scale, for n of 1, an odd n and one larger than a
// grid-stride loop's first pass; bf16 tensors through the typed launchers.
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

class CudaElementwise : public test::CudaKernelTest {};

TEST_F(CudaElementwise, GeluForwardAndBackwardMatchCpu) {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000003}}) {
    const auto inp = random_floats(n, 1, -6.0f, 6.0f), dout = random_floats(n, 2);
    std::vector<float> out(n), dinp(n);
    cpu_.gelu_forward(out.data(), inp.data(), n);
    cpu_.gelu_backward(dinp.data(), inp.data(), dout.data(), n);
    DeviceBuffer<float> g_inp(inp), g_dout(dout), g_out(n);
    gpu_->gelu_forward(g_out.get(), g_inp.get(), n);
    gpu_->gelu_backward(g_dout.get(), g_inp.get(), g_dout.get(), n);  // in place over dout
    const std::string label = "gelu f32 (n=" + std::to_string(n) + ")";
    expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
    expect_close(g_dout.download(), dinp, kF32Tolerance, label + " backward dinp (in place over dout)");
  }
}

TEST_F(CudaElementwise, AddAndScaleMatchCpuIncludingAliasing) {
  const std::int64_t n = (std::int64_t{1} << 24) + 3;  // beyond one pass of the grid-stride loop
  const auto a = random_floats(n, 11), b = random_floats(n, 12);
  std::vector<float> sum(n);
  cpu_.add(sum.data(), a.data(), b.data(), n);
  DeviceBuffer<float> g_a(a), g_b(b), g_out(n);
  gpu_->add(g_out.get(), g_a.get(), g_b.get(), n);
  test::expect_same_bits(g_out.download(), sum, "add f32 (n=" + std::to_string(n) + ") out");
  gpu_->add(g_a.get(), g_a.get(), g_b.get(), n);  // out aliases a
  test::expect_same_bits(g_a.download(), sum, "add f32 (n=" + std::to_string(n) + ") out aliasing a");
  gpu_->add(g_b.get(), g_out.get(), g_b.get(), n);  // out aliases b: b = a + 2b... computed on the CPU too
  std::vector<float> twice(n);
  cpu_.add(twice.data(), sum.data(), b.data(), n);
  test::expect_same_bits(g_b.download(), twice, "add f32 (n=" + std::to_string(n) + ") out aliasing b");
  cpu_.scale(twice.data(), -0.375f, n);
  gpu_->scale(g_b.get(), -0.375f, n);
  test::expect_same_bits(g_b.download(), twice, "scale f32 (n=" + std::to_string(n) + ") x");
}

TEST_F(CudaElementwise, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 4099;
  const auto inp = test::round_to_bf16(random_floats(n, 21, -5.0f, 5.0f));
  const auto dout = test::round_to_bf16(random_floats(n, 22));
  std::vector<float> out(n), dinp(n), sum(n), scaled = inp;
  cpu_.gelu_forward(out.data(), inp.data(), n);
  cpu_.gelu_backward(dinp.data(), inp.data(), dout.data(), n);
  cpu_.add(sum.data(), inp.data(), dout.data(), n);
  cpu_.scale(scaled.data(), 0.5f, n);
  DeviceBuffer<__nv_bfloat16> g_inp(test::to_bf16(inp)), g_dout(test::to_bf16(dout)), g_out(n), g_dinp(n), g_sum(n);
  detail::launch_gelu_forward(g_out.get(), g_inp.get(), n, stream_);
  detail::launch_gelu_backward(g_dinp.get(), g_inp.get(), g_dout.get(), n, stream_);
  detail::launch_add(g_sum.get(), g_inp.get(), g_dout.get(), n, stream_);
  detail::launch_scale(g_inp.get(), 0.5f, n, stream_);
  expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, "gelu bf16 (n=4099) forward out");
  expect_close(test::from_bf16(g_dinp.download()), dinp, kBf16Tolerance, "gelu bf16 (n=4099) backward dinp");
  expect_close(test::from_bf16(g_sum.download()), sum, kBf16Tolerance, "add bf16 (n=4099) out");
  expect_close(test::from_bf16(g_inp.download()), scaled, kBf16Tolerance, "scale bf16 (n=4099) x");
}

}  // namespace
}  // namespace tessera
