// CudaKernels activation ops against CpuKernels: ReLU and SiLU forward and backward (backward in
// place over dout), and dropout_apply's mask bit for bit (in place too), f32 and bf16, for n of 1
// and one larger than a grid-stride loop's first pass.
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

class CudaActivation : public test::CudaKernelTest {};

TEST_F(CudaActivation, ReluAndSiluMatchCpu) {
  for (std::int64_t n : {std::int64_t{1}, (std::int64_t{1} << 24) + 5}) {
    const auto inp = random_floats(n, 1, -9.0f, 9.0f), dout = random_floats(n, 2);
    std::vector<float> relu(n), drelu(n), silu(n), dsilu(n);
    cpu_.relu_forward(relu.data(), inp.data(), n);
    cpu_.relu_backward(drelu.data(), inp.data(), dout.data(), n);
    cpu_.silu_forward(silu.data(), inp.data(), n);
    cpu_.silu_backward(dsilu.data(), inp.data(), dout.data(), n);
    DeviceBuffer<float> g_inp(inp), g_dout(dout), g_dout2(dout), g_relu(n), g_silu(n);
    gpu_->relu_forward(g_relu.get(), g_inp.get(), n);
    gpu_->relu_backward(g_dout.get(), g_inp.get(), g_dout.get(), n);
    gpu_->silu_forward(g_silu.get(), g_inp.get(), n);
    gpu_->silu_backward(g_dout2.get(), g_inp.get(), g_dout2.get(), n);
    const std::string label = " (n=" + std::to_string(n) + ")";
    test::expect_same_bits(g_relu.download(), relu, "relu forward" + label);
    test::expect_same_bits(g_dout.download(), drelu, "relu backward in place" + label);
    expect_close(g_silu.download(), silu, kF32Tolerance, "silu forward" + label);
    expect_close(g_dout2.download(), dsilu, kF32Tolerance, "silu backward in place" + label);
  }
}

TEST_F(CudaActivation, DropoutMaskIsTheCpusBitForBit) {
  const std::int64_t n = (std::int64_t{1} << 24) + 7;
  const auto inp = random_floats(n, 3);
  const DropoutMask mask = dropout_mask(0x1234567890abcdefULL, 0.3f);
  std::vector<float> out(n);
  cpu_.dropout_apply(out.data(), inp.data(), n, mask);
  DeviceBuffer<float> g_inp(inp);
  gpu_->dropout_apply(g_inp.get(), g_inp.get(), n, mask);  // in place
  test::expect_same_bits(g_inp.download(), out, "dropout_apply f32 in place");
  const auto bf = test::to_bf16(random_floats(4097, 4));
  std::vector<__nv_bfloat16> bf_out(bf.size());
  cpu_.dropout_apply(reinterpret_cast<Bf16*>(bf_out.data()), reinterpret_cast<const Bf16*>(bf.data()), 4097, mask);
  DeviceBuffer<__nv_bfloat16> g_bf(bf), g_bf_out(bf.size());
  gpu_->dropout_apply(reinterpret_cast<Bf16*>(g_bf_out.get()), reinterpret_cast<const Bf16*>(g_bf.get()), 4097, mask);
  test::expect_same_bits(test::from_bf16(g_bf_out.download()), test::from_bf16(bf_out), "dropout_apply bf16");
}

}  // namespace
}  // namespace tessera
