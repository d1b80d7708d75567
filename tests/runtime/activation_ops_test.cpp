// The activation ops of the CPU table against their shared formulas (runtime/math/relu_math.hpp,
// silu_math.hpp, dropout_math.hpp) bit for bit, f32 and bf16, in place; the dropout mask's keep rate,
// and the simulated GPU's table giving the CPU's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/math/dropout_math.hpp"
#include "tessera/runtime/math/relu_math.hpp"
#include "tessera/runtime/math/silu_math.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {
namespace {

std::vector<float> activation_inputs(std::size_t n, std::uint64_t seed, float range) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = range * (2.0f * static_cast<float>(rng.next_u64() >> 40) * 0x1.0p-24f - 1.0f);
  v[0] = 0.0f;  // the kink: relu'(0) = 0
  return v;
}

TEST(ActivationOps, CpuMatchesTheSharedFormulasBitForBit) {
  const CpuKernels k;
  const std::int64_t n = 70001;  // above the parallel threshold
  const auto x = activation_inputs(n, 1, 12.0f), dy = activation_inputs(n, 2, 3.0f);
  std::vector<float> y(n), d = dy;
  k.relu_forward(y.data(), x.data(), n);
  k.relu_backward(d.data(), x.data(), d.data(), n);  // in place over dout
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], relu_value(x[i])) << "relu(" << x[i] << ")";
    ASSERT_EQ(d[i], x[i] > 0.0f ? dy[i] : 0.0f) << "relu backward at " << x[i];
  }
  d = dy;
  k.silu_forward(y.data(), x.data(), n);
  k.silu_backward(d.data(), x.data(), d.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], silu_value(x[i])) << "silu(" << x[i] << ")";
    ASSERT_EQ(d[i], silu_derivative(x[i]) * dy[i]) << "silu backward at " << x[i];
  }
  std::vector<Bf16> xb(n), yb(n);
  for (std::int64_t i = 0; i < n; ++i) xb[i] = from_f32<Bf16>(x[i]);
  k.silu_forward(yb.data(), xb.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(yb[i].bits, from_f32<Bf16>(silu_value(to_f32(xb[i]))).bits) << "bf16 silu at " << to_f32(xb[i]);
  }
}

TEST(ActivationOps, DropoutKeepsAboutOneMinusPScaledAndIsAFunctionOfTheIndex) {
  const CpuKernels k;
  const std::int64_t n = 1 << 20;
  const auto x = activation_inputs(n, 3, 1.0f);
  for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
    const DropoutMask mask = dropout_mask(42, p);
    std::vector<float> y = x;
    k.dropout_apply(y.data(), y.data(), n, mask);  // in place
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const bool keep = dropout_keeps(42, i, mask.threshold);
      ASSERT_EQ(y[i], keep ? x[i] * (1.0f / (1.0f - p)) : 0.0f) << "element " << i << ", p " << p;
      kept += keep;
    }
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.003) << "keep rate at p " << p;
  }
  EXPECT_EQ(dropout_mask(7, 0.0f).threshold, 0u) << "p = 0 drops nothing";
}

TEST(ActivationOps, SimulatedGpuGivesTheCpuBits) {
  auto cpu = make_cpu_device();
  auto gpu = make_device(DeviceChoice::kSimulatedGpu);
  const auto x = activation_inputs(5000, 4, 6.0f);
  auto run = [&](Device& device) {
    Tensor in = Tensor::from_host(device, x, {5000}, DType::kF32, MemoryCategory::kActivations);
    Tensor out = Tensor::empty(device, {5000}, DType::kF32, MemoryCategory::kActivations);
    std::vector<float> all;
    device.kernels().relu_forward(out.data_as<float>(), in.data_as<float>(), 5000);
    for (float v : out.to_host_f32()) all.push_back(v);
    device.kernels().silu_backward(out.data_as<float>(), in.data_as<float>(), in.data_as<float>(), 5000);
    for (float v : out.to_host_f32()) all.push_back(v);
    device.kernels().dropout_apply(out.data_as<float>(), in.data_as<float>(), 5000, dropout_mask(9, 0.25f));
    for (float v : out.to_host_f32()) all.push_back(v);
    return all;
  };
  EXPECT_EQ(run(*gpu), run(*cpu));
}

}  // namespace
}  // namespace tessera
