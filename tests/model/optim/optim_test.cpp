// AdamW (bias correction, decoupled decay only where declared, a gradient scale equal to scaling
// the gradients first), LR schedule and gradient clipping.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/model/optim/adamw.hpp"
#include "tessera/model/optim/grad_clip.hpp"
#include "tessera/model/optim/lr_schedule.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

TEST(AdamW, FirstStepMovesEachWeightByLrTimesSignAndDecaysOnlyMatrices) {
  auto device = make_cpu_device();
  Parameter w("w", {2}, ParameterInit::zeros(), true), b("b", {2}, ParameterInit::zeros(), false);
  std::vector<float> init = {1.0f, -2.0f}, g = {0.5f, -0.25f};
  for (Parameter* p : {&w, &b}) {
    p->value = Tensor::from_host(*device, init, {2}, DType::kF32, MemoryCategory::kParameters);
    p->grad = Tensor::from_host(*device, g, {2}, DType::kF32, MemoryCategory::kGradients);
  }
  AdamWConfig config;
  config.weight_decay = 0.1f;
  config.eps = 0.0f;
  AdamW opt(config, {&w, &b});
  opt.step(*device, 0.01f);
  // Step 1: mhat = g, vhat = g^2, so the Adam term is sign(g); decay adds lr*wd*param for w only.
  const auto wv = w.value.to_host_f32(), bv = b.value.to_host_f32();
  EXPECT_FLOAT_EQ(wv[0], 1.0f - 0.01f * (1.0f + 0.1f * 1.0f));
  EXPECT_FLOAT_EQ(wv[1], -2.0f - 0.01f * (-1.0f + 0.1f * -2.0f));
  EXPECT_FLOAT_EQ(bv[0], 1.0f - 0.01f);
  EXPECT_FLOAT_EQ(bv[1], -2.0f + 0.01f);
  EXPECT_EQ(device->memory().current(MemoryCategory::kOptimizerState), 4 * 2 * 4);
  EXPECT_FLOAT_EQ(adamw_scalars(config, 2, 1.0f, true).bias_correction2, 1.0f - 0.95f * 0.95f);
}

TEST(AdamW, GradScaleGivesTheBitsOfScalingTheGradientsFirst) {
  auto device = make_cpu_device();
  const std::vector<float> init = {1.0f, -2.0f, 0.25f}, g = {0.5f, -0.25f, 3.0f};
  Parameter fused("fused", {3}, ParameterInit::zeros(), true), scaled("scaled", {3}, ParameterInit::zeros(), true);
  for (Parameter* p : {&fused, &scaled}) {
    p->value = Tensor::from_host(*device, init, {3}, DType::kF32, MemoryCategory::kParameters);
    p->grad = Tensor::from_host(*device, g, {3}, DType::kF32, MemoryCategory::kGradients);
  }
  AdamWConfig config;
  config.weight_decay = 0.1f;
  AdamW fused_opt(config, {&fused}), scaled_opt(config, {&scaled});
  for (float factor : {0.3f, 0.7f}) {
    fused_opt.step(*device, 0.01f, factor);
    device->kernels().scale(scaled.grad.data_as<float>(), factor, 3);
    scaled_opt.step(*device, 0.01f);
    scaled.grad = Tensor::from_host(*device, g, {3}, DType::kF32, MemoryCategory::kGradients);
  }
  EXPECT_EQ(fused.value.to_host_f32(), scaled.value.to_host_f32());
  EXPECT_EQ(fused_opt.second_moment(0).to_host_f32(), scaled_opt.second_moment(0).to_host_f32());
  EXPECT_EQ(fused.grad.to_host_f32(), g) << "the scale is applied inside the update, not to the gradient";
}

TEST(LrSchedule, WarmsUpLinearlyThenFollowsTheCosine) {
  const LrSchedule s{1.0f, 10, 110, 0.1f};
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.1f);
  EXPECT_FLOAT_EQ(s.lr_at(9), 1.0f);
  EXPECT_FLOAT_EQ(s.lr_at(10), 1.0f);
  EXPECT_NEAR(s.lr_at(60), 0.55f, 1e-6f);  // half-way: min + (1-min)/2
  EXPECT_NEAR(s.lr_at(110), 0.1f, 1e-6f);
  EXPECT_NEAR(s.lr_at(500), 0.1f, 1e-6f);
}

TEST(GradClip, ScalesToTheMaxNormOnlyWhenAbove) {
  auto device = make_cpu_device();
  Parameter a("a", {2}, ParameterInit::zeros(), true), b("b", {1}, ParameterInit::zeros(), true);
  std::vector<float> ga = {3.0f, 0.0f}, gb = {4.0f};
  a.grad = Tensor::from_host(*device, ga, {2}, DType::kF32, MemoryCategory::kGradients);
  b.grad = Tensor::from_host(*device, gb, {1}, DType::kF32, MemoryCategory::kGradients);
  EXPECT_DOUBLE_EQ(clip_grad_norm(*device, {&a, &b}, 10.0f), 5.0);
  EXPECT_EQ(a.grad.to_host_f32()[0], 3.0f);
  EXPECT_DOUBLE_EQ(clip_grad_norm(*device, {&a, &b}, 1.0f), 5.0);
  EXPECT_NEAR(a.grad.to_host_f32()[0], 0.6f, 1e-6f);
  EXPECT_NEAR(b.grad.to_host_f32()[0], 0.8f, 1e-6f);
  EXPECT_EQ(clip_coefficient(NAN, 1.0f), 1.0f);
}

}  // namespace
}  // namespace tessera
