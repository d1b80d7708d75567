// Activation modules (ReLU, GELU, SiLU): backward against central finite differences and against the
// derivative in double precision, bf16 against f32 on bf16-rounded inputs, inference keeping nothing.
#include "tessera/model/modules/activation.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/model/modules/modules_test_support.hpp"

namespace tessera {
namespace {

using testing::bf16_rounded;
using testing::expect_matches_finite_differences;
using testing::module_gradients;
using testing::uniform_values;

std::unique_ptr<Activation> make_activation(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kRelu: return std::make_unique<Relu>();
    case ActivationKind::kGelu: return std::make_unique<Gelu>();
    case ActivationKind::kSilu: return std::make_unique<Silu>();
  }
  return nullptr;
}

// The activation and its derivative in double.
double value_in_double(ActivationKind kind, double x) {
  switch (kind) {
    case ActivationKind::kRelu: return x > 0 ? x : 0;
    case ActivationKind::kGelu: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case ActivationKind::kSilu: return x / (1 + std::exp(-x));
  }
  return 0;
}

double derivative_in_double(ActivationKind kind, double x) {
  switch (kind) {
    case ActivationKind::kRelu: return x > 0 ? 1 : 0;
    case ActivationKind::kGelu: {
      const double k = std::sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
    }
    case ActivationKind::kSilu: {
      const double s = 1 / (1 + std::exp(-x));
      return s + x * s * (1 - s);
    }
  }
  return 0;
}

constexpr ActivationKind kKinds[] = {ActivationKind::kRelu, ActivationKind::kGelu, ActivationKind::kSilu};

TEST(ActivationModules, BackwardMatchesFiniteDifferences) {
  auto device = make_cpu_device();
  const Shape shape{3, 7};
  const auto x = uniform_values(21, 11, -4.0f, 4.0f, /*gap from the ReLU kink*/ 0.05f);
  const auto w = uniform_values(21, 12, -1.0f, 1.0f);
  for (ActivationKind kind : kKinds) {
    auto m = make_activation(kind);
    expect_matches_finite_differences(*m, *device, x, shape, w, activation_name(kind));
  }
}

TEST(ActivationModules, ForwardAndBackwardMatchTheFormulasInDouble) {
  auto device = make_cpu_device();
  const Shape shape{2, 50};
  const auto x = uniform_values(100, 21, -9.0f, 9.0f);
  const auto w = uniform_values(100, 22, -2.0f, 2.0f);
  for (ActivationKind kind : kKinds) {
    auto m = make_activation(kind);
    const auto g = module_gradients(*m, *device, x, shape, w);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double y = value_in_double(kind, x[i]), d = derivative_in_double(kind, x[i]) * w[i];
      EXPECT_NEAR(g.output[i], y, 1e-6 + 1e-6 * std::fabs(y)) << activation_name(kind) << " at x = " << x[i];
      EXPECT_NEAR(g.dx[i], d, 1e-6 + 1e-6 * std::fabs(d)) << activation_name(kind) << "' at x = " << x[i];
    }
  }
}

// bf16 tensors compute in f32 and round each result once: within one bf16 rounding (half an ulp,
// 2^-8 relative) of the f32 module on the same (bf16-exact) inputs.
TEST(ActivationModules, Bf16IsWithinOneRoundingOfF32) {
  auto device = make_cpu_device();
  const Shape shape{4, 33};
  const auto x = bf16_rounded(uniform_values(132, 31, -6.0f, 6.0f));
  const auto w = bf16_rounded(uniform_values(132, 32, -2.0f, 2.0f));
  constexpr double kRel = 1.0 / 256;
  for (ActivationKind kind : kKinds) {
    auto m = make_activation(kind);
    const auto f32 = module_gradients(*m, *device, x, shape, w, DType::kF32);
    const auto bf16 = module_gradients(*m, *device, x, shape, w, DType::kBF16);
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(bf16.output[i], f32.output[i], kRel * std::fabs(f32.output[i]) + 1e-30)
          << activation_name(kind) << " bf16 output at x = " << x[i];
      EXPECT_NEAR(bf16.dx[i], f32.dx[i], kRel * std::fabs(f32.dx[i]) + 1e-30)
          << activation_name(kind) << " bf16 dx at x = " << x[i];
    }
  }
}

TEST(ActivationModules, InferenceKeepsNothingAndBackwardLeavesDyAlone) {
  auto device = make_cpu_device();
  Relu relu;
  Context ctx(*device);
  ctx.training = false;
  const Tensor x =
      Tensor::from_host(*device, std::vector<float>{-1, 2}, {2}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_EQ(relu.forward(ctx, x).to_host_f32(), (std::vector<float>{0, 2}));
  try {
    relu.backward(ctx, x);
    FAIL() << "backward after an inference forward did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ReLU::backward: expected a preceding training forward"), std::string::npos)
        << e.what();
  }
  ctx.training = true;
  relu.forward(ctx, x);
  const Tensor dy =
      Tensor::from_host(*device, std::vector<float>{5, 7}, {2}, DType::kF32, MemoryCategory::kActivations);
  EXPECT_EQ(relu.backward(ctx, dy).to_host_f32(), (std::vector<float>{0, 7}));
  EXPECT_EQ(dy.to_host_f32(), (std::vector<float>{5, 7})) << "backward changed dy";
}

}  // namespace
}  // namespace tessera
