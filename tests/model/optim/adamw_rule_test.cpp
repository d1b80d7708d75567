// AdamWRule: over a flat range cut into parameter segments it gives, bit for bit, what AdamW gives
// each parameter on its own (weight decay only where the segment's parameter decays), whether the
// range is updated at once or window by window, and with a gradient scale what AdamW gives after a
// scale() pass over the gradients; it declares its state as exp_avg and exp_avg_sq (f32, one
// element per element of the range).
#include "tessera/model/optim/adamw_rule.hpp"

#include <gtest/gtest.h>

#include "tessera/core/random.hpp"
#include "tessera/model/optim/adamw.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

TEST(AdamWRule, SegmentsMatchPerParameterAdamWInWindows) {
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
  std::vector<float> master = flat, m(9, 0.0f), v(9, 0.0f);
  std::vector<float> windowed = flat, wm(9, 0.0f), wv(9, 0.0f);  // the same, in windows [0,4) [4,9)
  const AdamWRule rule(config);
  const ParamSegment segments[] = {{0, 5, true}, {6, 3, false}};
  const ParamSegment first_window[] = {{0, 4, true}}, second_window[] = {{0, 1, true}, {2, 3, false}};

  for (int step = 1; step <= 3; ++step) {
    const std::vector<float> gw = random_values(5, 10 + step), gb = random_values(3, 20 + step);
    p0.grad = Tensor::from_host(*device, gw, {5}, DType::kF32, MemoryCategory::kGradients);
    p1.grad = Tensor::from_host(*device, gb, {3}, DType::kF32, MemoryCategory::kGradients);
    std::vector<float> g(9, 0.0f);
    std::copy(gw.begin(), gw.end(), g.begin());
    std::copy(gb.begin(), gb.end(), g.begin() + 6);
    // Steps 2 and 3 scale the gradients (a clip): the reference by a scale() pass, the rule inside.
    const float grad_scale = step == 1 ? 1.0f : 0.3f * static_cast<float>(step);
    device->kernels().scale(p0.grad.data_as<float>(), grad_scale, 5);
    device->kernels().scale(p1.grad.data_as<float>(), grad_scale, 3);
    reference.step(*device, 1e-2f);
    std::byte* state[] = {reinterpret_cast<std::byte*>(m.data()), reinterpret_cast<std::byte*>(v.data())};
    rule.update(device->kernels(), master.data(), g.data(), state, 9, segments, 1e-2f, step, grad_scale);
    std::byte* w0_state[] = {reinterpret_cast<std::byte*>(wm.data()), reinterpret_cast<std::byte*>(wv.data())};
    rule.update(device->kernels(), windowed.data(), g.data(), w0_state, 4, first_window, 1e-2f, step, grad_scale);
    std::byte* w1_state[] = {reinterpret_cast<std::byte*>(wm.data() + 4), reinterpret_cast<std::byte*>(wv.data() + 4)};
    rule.update(device->kernels(), windowed.data() + 4, g.data() + 4, w1_state, 5, second_window, 1e-2f, step,
                grad_scale);
  }
  const std::vector<float>& got = master;
  EXPECT_EQ(windowed, master) << "windows of the range differ from the whole range";
  EXPECT_EQ(wm, m);
  EXPECT_EQ(wv, v);
  const std::vector<float> w = p0.value.to_host_f32(), b = p1.value.to_host_f32();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], w[i]) << "w[" << i << "]";
  EXPECT_EQ(got[5], 0.0f) << "padding was updated";
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[6 + i], b[i]) << "b[" << i << "]";
  const std::vector<float> m_ref = reference.first_moment(0).to_host_f32();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(m[i], m_ref[i]) << "exp_avg[" << i << "]";
}

TEST(AdamWRule, DeclaresItsState) {
  const auto specs = AdamWRule({}).specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "exp_avg");
  EXPECT_EQ(specs[1].name, "exp_avg_sq");
  EXPECT_EQ(specs[0].dtype, DType::kF32);
  EXPECT_EQ(optimizer_state_bytes_per_element(OptimizerConfig{}), 8.0);
  EXPECT_EQ(make_optimizer_rule(OptimizerConfig{})->specs().size(), 2u);
  EXPECT_THROW(parse_optimizer_kind("lion"), std::invalid_argument);
  EXPECT_EQ(parse_optimizer_kind("adam"), OptimizerKind::kAdamW);
}

}  // namespace
}  // namespace tessera
