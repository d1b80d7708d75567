// AdamWState: over a flat range cut into parameter segments it gives, bit for bit, what AdamW gives
// each parameter on its own (weight decay only where the segment's parameter decays); it declares
// its state as exp_avg and exp_avg_sq (f32, one element per element of the range), allocates them
// in the memory kind asked for, and reset() zeroes them.
#include "runtime/optim/adamw_state.hpp"

#include <gtest/gtest.h>

#include "runtime/device.hpp"
#include "runtime/kernels.hpp"
#include "runtime/optim/adamw.hpp"
#include "runtime/random.hpp"

namespace tessera {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

TEST(AdamWState, SegmentsMatchPerParameterAdamW) {
  auto device = make_cpu_device();
  AdamWConfig config;
  config.weight_decay = 0.1f;
  // Two parameters laid out flat with one element of padding between them: [p0 (5) | pad | p1 (3)].
  Parameter p0("w", {5}, ParameterInit::zeros(), true), p1("b", {3}, ParameterInit::zeros(), false);
  const std::vector<float> w0 = random_values(5, 1), b0 = random_values(3, 2);
  p0.value = Tensor::from_host(*device, w0, {5}, DType::kF32, MemoryCategory::kParameters);
  p1.value = Tensor::from_host(*device, b0, {3}, DType::kF32, MemoryCategory::kParameters);
  AdamW reference(config, {&p0, &p1});

  std::vector<float> flat(9, 0.0f);
  std::copy(w0.begin(), w0.end(), flat.begin());
  std::copy(b0.begin(), b0.end(), flat.begin() + 6);
  Tensor master = Tensor::from_host(*device, flat, {9}, DType::kF32, MemoryCategory::kOptimizerState);
  AdamWState state(config, *device, 9, MemoryKind::kDevice);
  const ParamSegment segments[] = {{0, 5, true}, {6, 3, false}};

  for (int step = 1; step <= 3; ++step) {
    const std::vector<float> gw = random_values(5, 10 + step), gb = random_values(3, 20 + step);
    p0.grad = Tensor::from_host(*device, gw, {5}, DType::kF32, MemoryCategory::kGradients);
    p1.grad = Tensor::from_host(*device, gb, {3}, DType::kF32, MemoryCategory::kGradients);
    std::vector<float> g(9, 0.0f);
    std::copy(gw.begin(), gw.end(), g.begin());
    std::copy(gb.begin(), gb.end(), g.begin() + 6);
    const Tensor grads = Tensor::from_host(*device, g, {9}, DType::kF32, MemoryCategory::kGradients);
    reference.step(*device, 1e-2f);
    state.step(device->kernels(), master, grads, segments, 1e-2f, step);
  }
  const std::vector<float> got = master.to_host_f32();
  const std::vector<float> w = p0.value.to_host_f32(), b = p1.value.to_host_f32();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], w[i]) << "w[" << i << "]";
  EXPECT_EQ(got[5], 0.0f) << "padding was updated";
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[6 + i], b[i]) << "b[" << i << "]";
  const auto named = state.state();
  ASSERT_EQ(named.size(), 2u);
  const std::vector<float> m = named[0].tensor.to_host_f32(), m_ref = reference.first_moment(0).to_host_f32();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(m[i], m_ref[i]) << "exp_avg[" << i << "]";
}

TEST(AdamWState, DeclaresItsStateAndResets) {
  auto device = make_cpu_device();
  const auto specs = AdamWState::specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "exp_avg");
  EXPECT_EQ(specs[1].name, "exp_avg_sq");
  EXPECT_EQ(optimizer_state_bytes_per_element(OptimizerConfig{}), 8.0);
  AdamWState state({}, *device, 16, MemoryKind::kPinnedHost);
  EXPECT_EQ(device->memory(MemoryKind::kPinnedHost).current(MemoryCategory::kOptimizerState), 2 * 16 * 4);
  EXPECT_EQ(device->memory().current(MemoryCategory::kOptimizerState), 0);
  for (StateTensor t : state.state()) {
    EXPECT_EQ(t.tensor.numel(), 16);
    EXPECT_EQ(t.tensor.dtype(), DType::kF32);
    t.tensor.copy_from_host_f32(std::vector<float>(16, 3.0f));
  }
  state.reset();
  for (const StateTensor& t : state.state()) EXPECT_EQ(t.tensor.to_host_f32(), std::vector<float>(16, 0.0f)) << t.name;
  EXPECT_THROW(parse_optimizer_kind("lion"), std::invalid_argument);
  EXPECT_EQ(parse_optimizer_kind("adam"), OptimizerKind::kAdamW);
}

}  // namespace
}  // namespace tessera
