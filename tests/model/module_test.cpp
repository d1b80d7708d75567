// Module naming, wrapping, materialisation, a user-written Module, and the error naming a parameter
// without storage (MissingParameterStorage, what engines turn into their own message).
#include "tessera/model/module.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

GptConfig tiny_config() {
  GptConfig c;
  c.vocab_size = 16;
  c.max_seq_len = 8;
  c.layers = 2;
  c.heads = 2;
  c.channels = 8;
  return c;
}

TEST(Module, GptParameterNamesFollowTheGpt2Layout) {
  Gpt model(tiny_config());
  std::vector<std::string> names;
  for (auto& np : model.named_parameters()) names.push_back(np.name);
  const std::vector<std::string> expected_prefix = {
      "embed.wte",           "embed.wpe",         "h.0.ln_1.weight",      "h.0.ln_1.bias",
      "h.0.attn.qkv.weight", "h.0.attn.qkv.bias", "h.0.attn.proj.weight", "h.0.attn.proj.bias",
      "h.0.ln_2.weight",     "h.0.ln_2.bias",     "h.0.mlp.fc.weight",    "h.0.mlp.fc.bias",
      "h.0.mlp.proj.weight", "h.0.mlp.proj.bias"};
  ASSERT_GE(names.size(), expected_prefix.size());
  for (std::size_t i = 0; i < expected_prefix.size(); ++i) EXPECT_EQ(names[i], expected_prefix[i]) << "at " << i;
  EXPECT_EQ(names.back(), "ln_f.bias");
  // 2 embeddings + 12 per block x 2 + final LN 2; the head is tied and owns nothing.
  EXPECT_EQ(names.size(), 2u + 12u * 2u + 2u);
  const std::int64_t c = 8, v = 16, t = 8;
  EXPECT_EQ(model.parameter_count(), v * c + t * c + 2 * (12 * c * c + 13 * c) + 2 * c);
}

TEST(Module, InitialValuesDependOnSeedAndNameOnly) {
  auto device = make_cpu_device();
  Gpt a(tiny_config()), b(tiny_config());
  materialize_parameters(a, *device, 7);
  materialize_parameters(b, *device, 7);
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].parameter->value.to_host_f32(), pb[i].parameter->value.to_host_f32()) << pa[i].name;
  }
  // Two different names get different values; LayerNorm scales start at 1, biases at 0.
  EXPECT_NE(pa[0].parameter->value.to_host_f32()[0], pa[1].parameter->value.to_host_f32()[0]);
  EXPECT_EQ(pa[2].parameter->value.to_host_f32()[0], 1.0f);
  EXPECT_EQ(pa[3].parameter->value.to_host_f32()[0], 0.0f);
  // The residual projections use std 0.02/sqrt(2L) = 0.01 for L = 2.
  std::vector<float> proj;
  initial_values(*pa[6].parameter, "h.0.attn.proj.weight", 7, proj);
  double ss = 0;
  for (float x : proj) ss += x * x;
  const double std = std::sqrt(ss / proj.size());
  EXPECT_NEAR(std, 0.01, 0.004) << "empirical std of h.0.attn.proj.weight";
}

// A Module a user writes: y = 2 x, with no parameters.
class Doubler final : public Module {
 public:
  std::string type_name() const override { return "Doubler"; }
  Tensor forward(Context& ctx, const Tensor& x) override {
    Tensor y = new_activation(ctx, x.shape(), x.dtype());
    ctx.device.kernels().add(y.data_as<float>(), x.data_as<float>(), x.data_as<float>(), x.numel());
    return y;
  }
  Tensor backward(Context& ctx, Tensor dy) override { return forward(ctx, dy); }
};

// Wraps a module and counts calls: stands for checkpointing / sharding wrappers.
class Counting final : public Module {
 public:
  explicit Counting(std::unique_ptr<Module> inner) : inner_(register_child("inner", std::move(inner))) {}
  std::string type_name() const override { return "Counting"; }
  Tensor forward(Context& ctx, const Tensor& x) override {
    ++forwards;
    return inner_->forward(ctx, x);
  }
  Tensor backward(Context& ctx, Tensor dy) override { return inner_->backward(ctx, dy); }
  int forwards = 0;

 private:
  ModuleSlot& inner_;
};

class Chain final : public Module {
 public:
  Chain() {
    register_child("first", std::make_unique<Doubler>());
    register_child("second", std::make_unique<Linear>(2, 2, false));
  }
  std::string type_name() const override { return "Chain"; }
  Tensor forward(Context& ctx, const Tensor& x) override {
    Tensor h = children()[0]->forward(ctx, x);
    return children()[1]->forward(ctx, h);
  }
  Tensor backward(Context& ctx, Tensor dy) override {
    return children()[0]->backward(ctx, children()[1]->backward(ctx, dy));
  }
};

TEST(Module, UserModulesComposeAndWrappersReplaceChildrenInPlace) {
  auto device = make_cpu_device();
  Chain chain;
  chain.wrap_child("second", [](std::unique_ptr<Module> m) { return std::make_unique<Counting>(std::move(m)); });
  EXPECT_EQ(chain.named_parameters().at(0).name, "second.inner.weight");
  materialize_parameters(chain, *device, 1);
  std::vector<float> w = {1, 2, 3, 4};  // weight (out=2, in=2)
  chain.parameters()[0]->value.copy_from_host_f32(w);
  allocate_gradients(chain, *device);
  Context ctx(*device);
  std::vector<float> xv = {1, 1};
  Tensor x = Tensor::from_host(*device, xv, {1, 2}, DType::kF32, MemoryCategory::kActivations);
  Tensor y = chain.forward(ctx, x);  // 2x = (2,2); W (2x2) -> (1*2+2*2, 3*2+4*2) = (6, 14)
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{6, 14}));
  EXPECT_EQ(static_cast<Counting&>(*chain.children()[1]).forwards, 1);
  std::vector<float> dyv = {1, 0};
  Tensor dx = chain.backward(ctx, Tensor::from_host(*device, dyv, {1, 2}, DType::kF32, MemoryCategory::kActivations));
  EXPECT_EQ(dx.to_host_f32(), (std::vector<float>{2, 4}));                                 // W^T dy = (1,2), doubled
  EXPECT_EQ(chain.parameters()[0]->grad.to_host_f32(), (std::vector<float>{2, 2, 0, 0}));  // dy^T (2x)
  EXPECT_THROW(chain.wrap_child("missing", [](std::unique_ptr<Module> m) { return m; }), std::invalid_argument);
}

TEST(Module, ForwardBeforeMaterialisationNamesTheParameter) {
  auto device = make_cpu_device();
  Linear layer(2, 3, true);
  Context ctx(*device);
  std::vector<float> xv = {1, 2};
  Tensor x = Tensor::from_host(*device, xv, {1, 2}, DType::kF32, MemoryCategory::kActivations);
  try {
    layer.forward(ctx, x);
    FAIL() << "expected an error";
  } catch (const MissingParameterStorage& e) {  // a std::runtime_error that carries the parameter
    EXPECT_EQ(&e.parameter(), layer.own_parameters()[0]);
    EXPECT_NE(std::string(e.what()).find("has no storage: call materialize_parameters()"), std::string::npos)
        << e.what();
  }
  materialize_parameters(layer, *device, 0);
  EXPECT_THROW(require_grad(*layer.own_parameters()[0]), MissingParameterStorage);  // no gradient buffer yet
  std::vector<float> bad = {1, 2, 3};
  EXPECT_THROW(layer.forward(ctx, Tensor::from_host(*device, bad, {1, 3}, DType::kF32, MemoryCategory::kActivations)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tessera
