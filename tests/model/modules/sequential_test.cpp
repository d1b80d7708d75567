// Sequential: forward in order and backward in reverse against central finite differences (inputs
// and every parameter), the slot names that make parameter names, refused names, the empty
// container, and bf16 Linear/ReLU/Linear against f32 on bf16-rounded inputs and weights.
#include "tessera/model/modules/sequential.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/residual.hpp"
#include "tests/model/modules/modules_test_support.hpp"

namespace tessera {
namespace {

using testing::bf16_rounded;
using testing::expect_matches_finite_differences;
using testing::module_gradients;
using testing::uniform_values;

std::unique_ptr<Sequential> linear_relu_linear() {
  return std::make_unique<Sequential>(std::make_unique<Linear>(4, 6, true, 0.5f), std::make_unique<Relu>(),
                                      std::make_unique<Linear>(6, 3, true, 0.5f));
}

TEST(SequentialModule, LinearReluLinearMatchesFiniteDifferences) {
  auto device = make_cpu_device();
  auto model = linear_relu_linear();
  materialize_parameters(*model, *device, 5);
  allocate_gradients(*model, *device);
  const auto x = uniform_values(2 * 3 * 4, 41, -2.0f, 2.0f);
  const auto w = uniform_values(2 * 3 * 3, 42, -1.0f, 1.0f);
  expect_matches_finite_differences(*model, *device, x, {2, 3, 4}, w, "Linear/ReLU/Linear");
}

TEST(SequentialModule, NestedContainersMatchFiniteDifferences) {
  // Backward runs in reverse through a Residual around a Sequential, then a SiLU and a Linear.
  auto device = make_cpu_device();
  Sequential model;
  model.add(std::make_unique<Linear>(5, 5, false, 0.4f), "in")
      .add(std::make_unique<Residual>(std::make_unique<Sequential>(std::make_unique<Linear>(5, 8, true, 0.4f),
                                                                   std::make_unique<Gelu>(),
                                                                   std::make_unique<Linear>(8, 5, true, 0.4f))))
      .add(std::make_unique<Silu>());
  materialize_parameters(model, *device, 6);
  allocate_gradients(model, *device);
  const auto x = uniform_values(3 * 5, 51, -1.5f, 1.5f);
  const auto w = uniform_values(3 * 5, 52, -1.0f, 1.0f);
  expect_matches_finite_differences(model, *device, x, {3, 5}, w, "Linear/Residual(Linear/GELU/Linear)/SiLU");
}

TEST(SequentialModule, SlotsNameParametersByPositionOrGivenName) {
  Sequential model;
  model.add(std::make_unique<Linear>(2, 3, true))
      .add(std::make_unique<Relu>())
      .add(std::make_unique<Linear>(3, 1, false), "head");
  std::vector<std::string> names;
  for (const NamedParameter& np : model.named_parameters()) names.push_back(np.name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "head.weight"}));
  EXPECT_EQ(model.size(), 3u);
  EXPECT_EQ(model.name_at(1), "1");
  EXPECT_EQ(model.at(1).type_name(), "ReLU");
  EXPECT_THROW(model.at(3), std::out_of_range);
  try {
    model.add(std::make_unique<Relu>(), "head");
    FAIL() << "a second child named 'head' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a child is already named 'head'"), std::string::npos) << e.what();
  }
  try {
    model.add(std::make_unique<Relu>(), "a.b");
    FAIL() << "a child name with a '.' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'a.b' holds a '.'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model.add(nullptr), std::invalid_argument);
}

TEST(SequentialModule, EmptyIsTheIdentity) {
  auto device = make_cpu_device();
  Sequential empty;
  Context ctx(*device);
  const Tensor x =
      Tensor::from_host(*device, std::vector<float>{1, -2}, {2}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_EQ(empty.forward(ctx, x).to_host_f32(), x.to_host_f32());
  EXPECT_EQ(empty.backward(ctx, x).to_host_f32(), x.to_host_f32());
}

// Linear/ReLU/Linear on bf16 weights and inputs against f32 on the same (bf16-exact) values: each
// Linear rounds its output to bf16 once, and the second reads the first's rounded ReLU, so the bf16
// result is within a few bf16 roundings: 2^-6 of the largest magnitude of each tensor.
TEST(SequentialModule, Bf16IsCloseToF32OnRoundedValues) {
  auto device = make_cpu_device();
  auto f32_model = linear_relu_linear();
  auto bf16_model = linear_relu_linear();
  materialize_parameters(*f32_model, *device, 8);
  materialize_parameters(*bf16_model, *device, 8);
  const auto f32_params = f32_model->parameters();
  const auto bf16_params = bf16_model->parameters();
  for (std::size_t p = 0; p < f32_params.size(); ++p) {
    const auto v = bf16_rounded(f32_params[p]->value.to_host_f32());
    f32_params[p]->value.copy_from_host_f32(v);
    bf16_params[p]->value =
        Tensor::from_host(*device, v, bf16_params[p]->shape, DType::kBF16, MemoryCategory::kParameters);
    bf16_params[p]->grad = Tensor::zeros(*device, bf16_params[p]->shape, DType::kBF16, MemoryCategory::kGradients);
  }
  allocate_gradients(*f32_model, *device);
  const auto x = bf16_rounded(uniform_values(5 * 4, 61, -2.0f, 2.0f));
  const auto w = bf16_rounded(uniform_values(5 * 3, 62, -1.0f, 1.0f));
  const auto f32 = module_gradients(*f32_model, *device, x, {5, 4}, w, DType::kF32);
  const auto bf16 = module_gradients(*bf16_model, *device, x, {5, 4}, w, DType::kBF16);
  auto expect_close = [](const std::vector<float>& actual, const std::vector<float>& expected,
                         const std::string& what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    float largest = 0.0f;
    for (float v : expected) largest = std::max(largest, std::fabs(v));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(actual[i], expected[i], largest / 64) << what << "[" << i << "] (bf16 vs f32)";
    }
  };
  expect_close(bf16.output, f32.output, "output");
  expect_close(bf16.dx, f32.dx, "dx");
  for (std::size_t p = 0; p < f32.dparams.size(); ++p)
    expect_close(bf16.dparams[p], f32.dparams[p], "grad " + std::to_string(p));
}

}  // namespace
}  // namespace tessera
