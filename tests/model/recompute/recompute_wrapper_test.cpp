// RecomputeWrapper on its own: a user-written Module wrapped gives bit-identical gradients while
// keeping only its input between forward and backward; names and wrap_child are unchanged by
// wrapping; inference keeps nothing; misuse says what to change.
#include "tessera/model/recompute/recompute_wrapper.hpp"

#include <gtest/gtest.h>

#include "recompute_test_support.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

using testing::expect_bit_identical;
using testing::gradients_of;

// A Module a user writes: x (N,4) -> Linear(4,6) -> GELU -> Linear(6,3); keeps the pre-activation.
class UserMlp final : public Module {
 public:
  UserMlp() {
    register_child("up", std::make_unique<Linear>(4, 6, true, 0.5f));
    register_child("down", std::make_unique<Linear>(6, 3, false, 0.5f));
  }
  std::string type_name() const override { return "UserMlp"; }
  Tensor forward(Context& ctx, const Tensor& x) override {
    ++forwards;
    Tensor h = children()[0]->forward(ctx, x);
    Tensor g = new_activation(ctx, h.shape(), h.dtype());
    ctx.device.kernels().gelu_forward(g.data_as<float>(), h.data_as<float>(), h.numel());
    if (ctx.training) pre_ = h;
    return children()[1]->forward(ctx, g);
  }
  Tensor backward(Context& ctx, Tensor dy) override {
    Tensor dg = children()[1]->backward(ctx, dy);
    ctx.device.kernels().gelu_backward(dg.data_as<float>(), pre_.data_as<float>(), dg.data_as<float>(), dg.numel());
    pre_ = Tensor();
    return children()[0]->backward(ctx, dg);
  }
  int forwards = 0;

 protected:
  void clear_own_saved() override { pre_ = Tensor(); }

 private:
  Tensor pre_;
};

// Wraps a module and counts backward calls (stands for any other wrapper).
class CountingBackward final : public Module {
 public:
  explicit CountingBackward(std::unique_ptr<Module> inner) : inner_(register_child("", std::move(inner))) {}
  std::string type_name() const override { return "CountingBackward"; }
  Tensor forward(Context& ctx, const Tensor& x) override { return inner_->forward(ctx, x); }
  Tensor backward(Context& ctx, Tensor dy) override {
    ++backwards;
    return inner_->backward(ctx, dy);
  }
  int backwards = 0;

 private:
  ModuleSlot& inner_;
};

Tensor host_tensor(Device& device, std::vector<float> values, Shape shape) {
  return Tensor::from_host(device, values, std::move(shape), DType::kF32, MemoryCategory::kActivations);
}

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.0f);
  return v;
}

struct UserRun {
  std::vector<float> y, dx;
  std::vector<testing::NamedValues> grads;
  std::int64_t kept_bytes = 0;  // activations held between forward and backward, beyond x and y
};

UserRun run_user_module(Module& model, Device& device) {
  materialize_parameters(model, device, 11);
  allocate_gradients(model, device);
  Context ctx(device);
  UserRun run;
  Tensor x = host_tensor(device, ramp(5 * 4, 0.25f), {5, 4});
  Tensor y = model.forward(ctx, x);
  run.kept_bytes = device.memory().current(MemoryCategory::kActivations) - static_cast<std::int64_t>(x.nbytes()) -
                   static_cast<std::int64_t>(y.nbytes());
  run.y = y.to_host_f32();
  run.dx = model.backward(ctx, host_tensor(device, ramp(5 * 3, 0.5f), {5, 3})).to_host_f32();
  run.grads = gradients_of(model);
  return run;
}

TEST(RecomputeWrapper, UserModuleGradientsAreBitIdenticalAndOnlyTheInputIsKept) {
  auto device = make_cpu_device();
  UserMlp plain;
  const UserRun expected = run_user_module(plain, *device);
  EXPECT_EQ(plain.forwards, 1);
  EXPECT_GT(expected.kept_bytes, 0) << "the unwrapped module keeps its intermediates";

  RecomputeWrapper wrapped(std::make_unique<UserMlp>());
  const UserRun actual = run_user_module(wrapped, *device);
  EXPECT_EQ(actual.kept_bytes, 0) << "a wrapped module keeps nothing but its input between forward and backward";
  EXPECT_EQ(static_cast<UserMlp&>(wrapped.inner()).forwards, 2) << "backward recomputes the forward once";
  EXPECT_EQ(actual.y, expected.y);
  EXPECT_EQ(actual.dx, expected.dx);
  expect_bit_identical(expected.grads, actual.grads, "wrapped UserMlp");
  EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), 0) << "everything released after backward";
}

TEST(RecomputeWrapper, NamesDoNotChangeAndWrapChildReplacesTheWrappedModule) {
  auto device = make_cpu_device();
  UserMlp plain;
  RecomputeWrapper wrapped(std::make_unique<UserMlp>());
  std::vector<std::string> expected, actual;
  for (auto& np : plain.named_parameters("block")) expected.push_back(np.name);
  for (auto& np : wrapped.named_parameters("block")) actual.push_back(np.name);
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(actual.front(), "block.up.weight");

  // The wrapper and the wrapped module share a name; the wrapper comes first.
  const auto modules = wrapped.named_modules("block");
  ASSERT_GE(modules.size(), 3u);
  EXPECT_EQ(modules[0].name, "block");
  EXPECT_EQ(modules[0].module->type_name(), "RecomputeWrapper");
  EXPECT_EQ(modules[1].name, "block");
  EXPECT_EQ(modules[1].module->type_name(), "UserMlp");
  EXPECT_EQ(modules[2].name, "block.up");

  // Another wrapper goes inside through the empty slot name; the checkpoint wrapper calls through it.
  Module& counting = wrapped.wrap_child("", [](std::unique_ptr<Module> m) -> std::unique_ptr<Module> {
    return std::make_unique<CountingBackward>(std::move(m));
  });
  EXPECT_EQ(&wrapped.inner(), &counting);
  actual.clear();
  for (auto& np : wrapped.named_parameters("block")) actual.push_back(np.name);
  EXPECT_EQ(actual, expected);
  run_user_module(wrapped, *device);
  EXPECT_EQ(static_cast<CountingBackward&>(counting).backwards, 1);
}

TEST(RecomputeWrapper, InferenceForwardKeepsNothingAndBackwardThenExplains) {
  auto device = make_cpu_device();
  RecomputeWrapper wrapped(std::make_unique<UserMlp>());
  materialize_parameters(wrapped, *device, 1);
  allocate_gradients(wrapped, *device);
  Context ctx(*device);
  ctx.training = false;
  Tensor x = host_tensor(*device, ramp(4, 1.0f), {1, 4});
  Tensor y = wrapped.forward(ctx, x);
  EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), static_cast<std::int64_t>(x.nbytes() + y.nbytes()));
  ctx.training = true;
  try {
    wrapped.backward(ctx, host_tensor(*device, ramp(3, 1.0f), {1, 3}));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RecomputeWrapper(UserMlp)::backward: expected a preceding training forward"),
              std::string::npos)
        << e.what();
  }
}

TEST(RecomputeWrapper, RejectsANullModule) { EXPECT_THROW(RecomputeWrapper(nullptr), std::invalid_argument); }

TEST(RecomputeWrapper, ReportsTheWrappedModulesTiedParameters) {
  Gpt model(testing::checkpoint_test_config());
  apply_recompute(model,
                  RecomputePolicy::by_name([](const std::string& name, const Module&) { return name == "head"; }));
  Module& head = *model.children().back();
  ASSERT_EQ(head.type_name(), "RecomputeWrapper");
  ASSERT_EQ(head.tied_parameters().size(), 1u);
  EXPECT_EQ(head.tied_parameters()[0], model.named_parameters().at(0).parameter);  // embed.wte
}

}  // namespace
}  // namespace tessera
