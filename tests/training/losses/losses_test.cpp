// The shipped losses on the CPU and on the simulated GPU (the same kernels' contract on a device
// whose memory the host cannot read):
//  * MeanSquaredError: the mean of (p - t)^2 and its gradient 2 (p - t) scale / n, bf16 predictions
//    within bf16 rounding of f32 on the same (rounded) values, refusals naming the expected shape;
//  * MaskedCrossEntropy: the loss and gradients of the counted rows bit for bit those of the
//    cross-entropy over just those rows, ignored rows a zero gradient, a micro-batch with nothing
//    counted a loss of 0, and one label per sample ((B,V) logits against (B) targets);
//  * every loss's gradient against central finite differences of its mean.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/training/losses/masked_cross_entropy.hpp"
#include "tessera/training/losses/mean_squared_error.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"

namespace tessera {
namespace {

std::vector<float> normal_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal();
  return v;
}

Tensor values_on(Device& d, const std::vector<float>& v, const Shape& shape, DType dtype = DType::kF32) {
  return Tensor::from_host(d, v, shape, dtype, MemoryCategory::kActivations);
}
Tensor ids_on(Device& d, const std::vector<std::int32_t>& v, const Shape& shape) {
  return Tensor::from_host_i32(d, v, shape, MemoryCategory::kWorkspace);
}

// The loss's mean over `batch` for `outputs` (a forward that keeps nothing).
double mean_of(Loss& loss, Device& device, const Tensor& outputs, const MicroBatch& batch) {
  Context ctx(device);
  ctx.training = false;
  auto sum = Storage::allocate(device, sizeof(double), MemoryCategory::kWorkspace);
  const std::int64_t count = loss.forward_sum(ctx, outputs, batch, static_cast<double*>(sum->data()));
  double host = 0.0;
  device.copy_to_host(&host, sum->data(), sizeof(double));
  return host / static_cast<double>(count);
}

// Forward (training) then backward(scale): the gradient on the host.
std::vector<float> gradient_of(Loss& loss, Device& device, const Tensor& outputs, const MicroBatch& batch, float scale,
                               double* mean = nullptr) {
  Context ctx(device);
  auto sum = Storage::allocate(device, sizeof(double), MemoryCategory::kWorkspace);
  const std::int64_t count = loss.forward_sum(ctx, outputs, batch, static_cast<double*>(sum->data()));
  if (mean != nullptr) {
    double host = 0.0;
    device.copy_to_host(&host, sum->data(), sizeof(double));
    *mean = host / static_cast<double>(count);
  }
  return loss.backward(ctx, scale).to_host_f32();
}

// Central differences of the loss's mean at each element of `values` (shape `shape`).
std::vector<double> finite_differences(Loss& loss, Device& device, const std::vector<float>& values, const Shape& shape,
                                       const MicroBatch& batch) {
  std::vector<double> grad(values.size());
  const float h = 1e-2f;
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::vector<float> up = values, down = values;
    up[i] += h;
    down[i] -= h;
    const double f_up = mean_of(loss, device, values_on(device, up, shape), batch);
    const double f_down = mean_of(loss, device, values_on(device, down, shape), batch);
    grad[i] = (f_up - f_down) / (2.0 * h);
  }
  return grad;
}

class Losses : public ::testing::TestWithParam<DeviceChoice> {
 protected:
  std::unique_ptr<Device> device_ = make_device(GetParam());
};

TEST_P(Losses, MeanSquaredErrorIsTheMeanOfSquaredDifferencesWithItsGradient) {
  Device& d = *device_;
  const Shape shape{3, 4};
  const std::vector<float> p = normal_values(12, 1), t = normal_values(12, 2);
  MicroBatch batch{Tensor(), values_on(d, t, shape)};
  MeanSquaredError mse;
  double expected = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) expected += static_cast<double>((p[i] - t[i]) * (p[i] - t[i]));
  expected /= 12.0;
  double mean = 0.0;
  const std::vector<float> grad = gradient_of(mse, d, values_on(d, p, shape), batch, /*scale=*/0.5f, &mean);
  EXPECT_NEAR(mean, expected, 1e-6 * expected);
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(grad[i], (2.0f * (p[i] - t[i])) * (0.5f / 12.0f)) << "element " << i;
  }
  const std::vector<double> fd = finite_differences(mse, d, p, shape, batch);
  const std::vector<float> unscaled = gradient_of(mse, d, values_on(d, p, shape), batch, 1.0f);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(unscaled[i], fd[i], 1e-4) << "element " << i;
}

TEST_P(Losses, MeanSquaredErrorInBf16FollowsF32OnTheRoundedValues) {
  Device& d = *device_;
  const Shape shape{2, 8};
  std::vector<float> p = normal_values(16, 3);
  for (float& x : p) x = to_f32(from_f32<Bf16>(x));
  MicroBatch batch{Tensor(), values_on(d, normal_values(16, 4), shape)};
  MeanSquaredError mse;
  double f32_mean = 0.0, bf16_mean = 0.0;
  const std::vector<float> f32 = gradient_of(mse, d, values_on(d, p, shape), batch, 1.0f, &f32_mean);
  const std::vector<float> bf16 = gradient_of(mse, d, values_on(d, p, shape, DType::kBF16), batch, 1.0f, &bf16_mean);
  EXPECT_EQ(bf16_mean, f32_mean) << "the squared errors are f32 either way";
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(bf16[i], f32[i], std::fabs(f32[i]) * (1.0f / 128.0f)) << i;
}

TEST_P(Losses, MeanSquaredErrorRefusesTargetsOfAnotherShapeOrDtype) {
  Device& d = *device_;
  MeanSquaredError mse;
  Context ctx(d);
  auto sum = Storage::allocate(d, sizeof(double), MemoryCategory::kWorkspace);
  const Tensor pred = Tensor::zeros(d, {2, 3}, DType::kF32, MemoryCategory::kActivations);
  const MicroBatch wrong_shape{Tensor(), Tensor::zeros(d, {2, 4}, DType::kF32, MemoryCategory::kWorkspace)};
  try {
    mse.forward_sum(ctx, pred, wrong_shape, static_cast<double*>(sum->data()));
    FAIL() << "targets of another shape were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MeanSquaredError"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2, 3)"), std::string::npos) << e.what();
  }
  const MicroBatch ids{Tensor(), ids_on(d, std::vector<std::int32_t>(6, 1), {2, 3})};
  EXPECT_THROW(mse.forward_sum(ctx, pred, ids, static_cast<double*>(sum->data())), std::invalid_argument);
}

TEST_P(Losses, MaskedCrossEntropyCountsOnlyTheUnmaskedRowsBitForBit) {
  Device& d = *device_;
  const std::int64_t rows = 6, vocab = 5;
  const std::vector<float> logits = normal_values(rows * vocab, 5);
  const std::vector<std::int32_t> targets = {2, kIgnoredTarget, 0, 4, kIgnoredTarget, 1};
  // The counted rows alone, through the plain cross-entropy.
  std::vector<float> kept_logits;
  std::vector<std::int32_t> kept_targets;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (targets[r] == kIgnoredTarget) continue;
    kept_logits.insert(kept_logits.end(), logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    kept_targets.push_back(targets[r]);
  }
  const std::int64_t kept = static_cast<std::int64_t>(kept_targets.size());
  TokenCrossEntropy plain;
  double plain_mean = 0.0;
  const std::vector<float> plain_grad =
      gradient_of(plain, d, values_on(d, kept_logits, {1, kept, vocab}),
                  MicroBatch{Tensor(), ids_on(d, kept_targets, {1, kept})}, 0.25f, &plain_mean);
  MaskedCrossEntropy masked;
  double masked_mean = 0.0;
  const std::vector<float> masked_grad =
      gradient_of(masked, d, values_on(d, logits, {2, 3, vocab}), MicroBatch{Tensor(), ids_on(d, targets, {2, 3})},
                  0.25f, &masked_mean);
  EXPECT_EQ(masked_mean, plain_mean);
  std::size_t k = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < vocab; ++j) {
      const float g = masked_grad[static_cast<std::size_t>(r * vocab + j)];
      if (targets[r] == kIgnoredTarget) {
        EXPECT_EQ(g, 0.0f) << "ignored row " << r;
      } else {
        EXPECT_EQ(g, plain_grad[k * vocab + j]) << "row " << r << " column " << j;
      }
    }
    if (targets[r] != kIgnoredTarget) ++k;
  }
}

TEST_P(Losses, MaskedCrossEntropyWithOneLabelPerSampleAndNothingCounted) {
  Device& d = *device_;
  const std::vector<float> logits = normal_values(3 * 4, 6);
  MaskedCrossEntropy masked;
  const Shape shape{3, 4};
  const MicroBatch labels{Tensor(), ids_on(d, std::vector<std::int32_t>{3, 0, kIgnoredTarget}, {3})};
  const std::vector<double> fd = finite_differences(masked, d, logits, shape, labels);
  const std::vector<float> grad = gradient_of(masked, d, values_on(d, logits, shape), labels, 1.0f);
  for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], fd[i], 1e-4) << "element " << i;
  const MicroBatch none{Tensor(), ids_on(d, std::vector<std::int32_t>(3, kIgnoredTarget), {3})};
  double mean = -1.0;
  const std::vector<float> zero = gradient_of(masked, d, values_on(d, logits, shape), none, 1.0f, &mean);
  EXPECT_EQ(mean, 0.0);
  for (float g : zero) EXPECT_EQ(g, 0.0f);
}

TEST_P(Losses, TokenCrossEntropyGradientAgainstFiniteDifferences) {
  Device& d = *device_;
  const Shape shape{1, 3, 4};
  const std::vector<float> logits = normal_values(12, 7);
  const MicroBatch batch{Tensor(), ids_on(d, std::vector<std::int32_t>{1, 3, 0}, {1, 3})};
  TokenCrossEntropy ce;
  const std::vector<double> fd = finite_differences(ce, d, logits, shape, batch);
  const std::vector<float> grad = gradient_of(ce, d, values_on(d, logits, shape), batch, 1.0f);
  for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], fd[i], 1e-4) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Devices, Losses, ::testing::Values(DeviceChoice::kCpu, DeviceChoice::kSimulatedGpu),
                         [](const auto& info) { return info.param == DeviceChoice::kCpu ? "cpu" : "sim_gpu"; });

}  // namespace
}  // namespace tessera
