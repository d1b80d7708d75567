// CudaKernels::adamw_update against CpuKernels over several steps (param, m, v) on an odd-length
// array; the bf16 variant (bf16 gradients, the updated f32 master also written as bf16) through the
// typed launcher: the master matches the CPU given the same rounded gradients, and the bf16 copy is
// exactly the master rounded to nearest even.
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

class CudaAdamW : public test::CudaKernelTest {};

AdamWScalars scalars(int step) {
  AdamWScalars s;
  s.lr = 1e-2f;
  s.weight_decay = 0.1f;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(0.9, step));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(0.95, step));
  return s;
}

TEST_F(CudaAdamW, MatchesCpuOverSeveralSteps) {
  const std::int64_t n = 100003;
  auto param = random_floats(n, 1);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  DeviceBuffer<float> g_param(param), g_m(m), g_v(v), g_grad(n);
  for (int step = 1; step <= 3; ++step) {
    const auto grad = random_floats(n, 10 + step);
    g_grad.upload(grad);
    gpu_->adamw_update(g_param.get(), g_grad.get(), g_m.get(), g_v.get(), n, scalars(step));
    cpu_.adamw_update(param.data(), grad.data(), m.data(), v.data(), n, scalars(step));
    const std::string label = "adamw_update f32 (n=100003) step " + std::to_string(step);
    expect_close(g_param.download(), param, kF32Tolerance, label + " param");
    expect_close(g_m.download(), m, kF32Tolerance, label + " m");
    expect_close(g_v.download(), v, kF32Tolerance, label + " v");
  }
}

TEST_F(CudaAdamW, Bf16GradientsAndBf16WriteBack) {
  const std::int64_t n = 4097;
  auto param = random_floats(n, 21);
  auto m = random_floats(n, 22, -0.1f, 0.1f), v = random_floats(n, 23, 0.0f, 0.01f);
  const auto grad = test::round_to_bf16(random_floats(n, 24));
  DeviceBuffer<float> g_param(param), g_m(m), g_v(v);
  DeviceBuffer<__nv_bfloat16> g_grad(test::to_bf16(grad)), g_copy(n);
  detail::launch_adamw(g_param.get(), g_grad.get(), g_m.get(), g_v.get(), g_copy.get(), n, scalars(2), stream_);
  cpu_.adamw_update(param.data(), grad.data(), m.data(), v.data(), n, scalars(2));
  const auto master = g_param.download();
  expect_close(master, param, kF32Tolerance, "adamw bf16 grad (n=4097) param (f32 master)");
  expect_close(g_m.download(), m, kF32Tolerance, "adamw bf16 grad (n=4097) m");
  expect_close(g_v.download(), v, kF32Tolerance, "adamw bf16 grad (n=4097) v");
  test::expect_same_bits(test::from_bf16(g_copy.download()), test::round_to_bf16(master),
                         "adamw bf16 grad (n=4097) bf16 write-back vs the master rounded to bf16");
}

}  // namespace
}  // namespace tessera
