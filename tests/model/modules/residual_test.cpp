// Residual: y = x + inner(x) and dx = dy + inner'(dy) against central finite differences, dy left
// as it was, an inner module that returns dy itself, names unchanged by the wrapper, bf16 vs f32.
#include "tessera/model/modules/residual.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/dropout.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/sequential.hpp"
#include "tests/model/modules/modules_test_support.hpp"

namespace tessera {
namespace {

using testing::bf16_rounded;
using testing::expect_matches_finite_differences;
using testing::module_gradients;
using testing::uniform_values;

TEST(ResidualModule, MatchesFiniteDifferences) {
  auto device = make_cpu_device();
  Residual block(std::make_unique<Sequential>(std::make_unique<Linear>(4, 7, true, 0.5f), std::make_unique<Gelu>(),
                                              std::make_unique<Linear>(7, 4, true, 0.5f)));
  materialize_parameters(block, *device, 3);
  allocate_gradients(block, *device);
  const auto x = uniform_values(12, 71, -2.0f, 2.0f);
  const auto w = uniform_values(12, 72, -1.0f, 1.0f);
  expect_matches_finite_differences(block, *device, x, {3, 4}, w, "Residual(Linear/GELU/Linear)");
}

TEST(ResidualModule, KeepsParameterNamesAndLeavesDyAlone) {
  auto device = make_cpu_device();
  Sequential model;
  model.add(std::make_unique<Residual>(std::make_unique<Linear>(2, 2, false)));
  EXPECT_EQ(model.named_parameters().at(0).name, "0.weight");
  // An inner module returning dy itself (dropout with p = 0): dx = 2 dy in a new tensor.
  Residual identity(std::make_unique<Dropout>(0.0f));
  Context ctx(*device);
  const Tensor x =
      Tensor::from_host(*device, std::vector<float>{1, -3}, {2}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_EQ(identity.forward(ctx, x).to_host_f32(), (std::vector<float>{2, -6}));
  const Tensor dy =
      Tensor::from_host(*device, std::vector<float>{0.5f, 4}, {2}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_EQ(identity.backward(ctx, dy).to_host_f32(), (std::vector<float>{1, 8}));
  EXPECT_EQ(dy.to_host_f32(), (std::vector<float>{0.5f, 4})) << "backward changed dy";
  EXPECT_THROW(Residual(nullptr), std::invalid_argument);
}

TEST(ResidualModule, RefusesAnInnerOutputOfAnotherShape) {
  auto device = make_cpu_device();
  Residual wrong(std::make_unique<Linear>(3, 2, false));
  materialize_parameters(wrong, *device, 1);
  Context ctx(*device);
  const Tensor x = Tensor::zeros(*device, {1, 3}, DType::kF32, MemoryCategory::kActivations);
  try {
    wrong.forward(ctx, x);
    FAIL() << "an inner output of another shape was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Residual(Linear): expected an inner output of its input's f32 (1, 3)"),
              std::string::npos)
        << e.what();
  }
}

// SiLU inside: two roundings to bf16 (SiLU's output, then the sum), each within half an ulp (2^-8
// relative) of its own value: |bf16 - f32| <= (|inner| + |sum|) / 256 for the output and for dx.
TEST(ResidualModule, Bf16IsWithinTwoRoundingsOfF32) {
  auto device = make_cpu_device();
  Residual block(std::make_unique<Silu>());
  const auto x = bf16_rounded(uniform_values(40, 81, -5.0f, 5.0f));
  const auto w = bf16_rounded(uniform_values(40, 82, -1.0f, 1.0f));
  const auto f32 = module_gradients(block, *device, x, {4, 10}, w, DType::kF32);
  const auto bf16 = module_gradients(block, *device, x, {4, 10}, w, DType::kBF16);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double out_bound = (std::fabs(f32.output[i] - x[i]) + std::fabs(f32.output[i])) / 256;
    const double dx_bound = (std::fabs(f32.dx[i] - w[i]) + std::fabs(f32.dx[i])) / 256;
    EXPECT_NEAR(bf16.output[i], f32.output[i], out_bound * 1.01) << "output at x = " << x[i];
    EXPECT_NEAR(bf16.dx[i], f32.dx[i], dx_bound * 1.01) << "dx at x = " << x[i];
  }
}

}  // namespace
}  // namespace tessera
