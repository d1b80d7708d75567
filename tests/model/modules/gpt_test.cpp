// The whole GPT: gradients against central finite differences (tiny config), and forward/backward
// releasing every activation they allocate.
#include "tessera/model/modules/gpt.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/core/random.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera {
namespace {

GptConfig tiny_config() {
  GptConfig c;
  c.vocab_size = 11;
  c.max_seq_len = 6;
  c.layers = 2;
  c.heads = 2;
  c.channels = 8;
  return c;
}

struct Batch {
  Tensor inputs, targets;
};

Batch random_batch(Device& device, const GptConfig& c, std::int64_t b, std::int64_t t, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(b * t)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  return {Tensor::from_host_i32(device, in, {b, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {b, t}, MemoryCategory::kWorkspace)};
}

double loss_of(Gpt& model, Device& device, const Batch& batch) {
  Context ctx(device);
  ctx.training = false;
  CrossEntropyLoss loss;
  Tensor logits = model.forward(ctx, batch.inputs);
  return loss.forward(ctx, logits, batch.targets);
}

TEST(Gpt, GradientsMatchFiniteDifferences) {
  auto device = make_cpu_device();
  const GptConfig config = tiny_config();
  Gpt model(config);
  materialize_parameters(model, *device, 3);
  // Larger weights than the 0.02 init so every path carries a visible gradient.
  Rng scale_rng(5);
  for (auto& np : model.named_parameters()) {
    std::vector<float> v = np.parameter->value.to_host_f32();
    for (float& x : v) x += static_cast<float>(0.3 * scale_rng.normal());
    np.parameter->value.copy_from_host_f32(v);
  }
  allocate_gradients(model, *device);
  const Batch batch = random_batch(*device, config, 2, 5, 9);

  Context ctx(*device);
  CrossEntropyLoss loss;
  Tensor logits = model.forward(ctx, batch.inputs);
  loss.forward(ctx, logits, batch.targets);
  model.backward(ctx, loss.backward(ctx, 1.0f));

  // Central differences in f32 forwards, eps chosen for f32 round-off vs truncation; tolerance
  // 2e-3 absolute + 2% relative per element.
  const float eps = 3e-3f;
  Rng pick(11);
  int checked = 0;
  for (auto& [name, p] : model.named_parameters()) {
    const std::vector<float> grad = p->grad.to_host_f32();
    std::vector<float> value = p->value.to_host_f32();
    for (int s = 0; s < 6; ++s) {
      const auto i = static_cast<std::size_t>(pick.below(value.size()));
      const float orig = value[i];
      value[i] = orig + eps;
      p->value.copy_from_host_f32(value);
      const double up = loss_of(model, *device, batch);
      value[i] = orig - eps;
      p->value.copy_from_host_f32(value);
      const double down = loss_of(model, *device, batch);
      value[i] = orig;
      p->value.copy_from_host_f32(value);
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 0.02 * std::abs(numeric)) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 28);
}

TEST(Gpt, TrainingStepReleasesEveryActivation) {
  auto device = make_cpu_device();
  const GptConfig config = tiny_config();
  Gpt model(config);
  materialize_parameters(model, *device, 3);
  allocate_gradients(model, *device);
  const Batch batch = random_batch(*device, config, 2, 6, 1);
  Context ctx(*device);
  {
    CrossEntropyLoss loss;
    Tensor logits = model.forward(ctx, batch.inputs);
    EXPECT_GT(device->memory().current(MemoryCategory::kActivations), 0);
    loss.forward(ctx, logits, batch.targets);
    logits = Tensor();
    model.backward(ctx, loss.backward(ctx, 1.0f));
  }
  EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), 0);
  EXPECT_EQ(device->memory().current(MemoryCategory::kWorkspace), 2 * 2 * 6 * 4);  // the batch itself
}

TEST(Gpt, RejectsSequencesLongerThanTheModel) {
  auto device = make_cpu_device();
  Gpt model(tiny_config());
  materialize_parameters(model, *device, 3);
  Context ctx(*device);
  const Batch batch = random_batch(*device, tiny_config(), 1, 7, 1);
  EXPECT_THROW(model.forward(ctx, batch.inputs), std::invalid_argument);
}

TEST(GptConfig, ValidationNamesTheSetting) {
  GptConfig c = tiny_config();
  c.channels = 10;
  c.heads = 4;
  try {
    c.validate();
    FAIL() << "expected an error";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "model.channels");
    EXPECT_EQ(e.value(), "10");
    EXPECT_NE(std::string(e.what()).find("is not divisible by the 4 heads"), std::string::npos) << e.what();
    const SettingNames flags{{"model.channels", "--dim"}};
    EXPECT_EQ(flags.explain(e),
              "--dim 10: is not divisible by the 4 heads; choose channels that are a multiple of heads");
  }
}

}  // namespace
}  // namespace tessera
