// Dropout: the identity in inference; in training a mask that is a pure function of (seed, full
// name, counter, element index) — the same for the same inputs, another for another name or counter,
// dropping about p of the elements and scaling the others by 1 / (1 - p) — applied again by
// backward; the counter moving in backward only, so a recomputed forward draws the same mask;
// backward against finite differences at a fixed mask; bf16 against f32; the simulated GPU's bits.
#include "tessera/model/modules/dropout.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/sequential.hpp"
#include "tessera/model/recompute/recompute_wrapper.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tests/model/modules/modules_test_support.hpp"

namespace tessera {
namespace {

using testing::bf16_rounded;
using testing::expect_matches_finite_differences;
using testing::module_gradients;
using testing::uniform_values;

std::vector<float> ones(std::size_t n) { return std::vector<float>(n, 1.0f); }

// The training-mode output of `dropout` on ones (n): the mask times the scale. Leaves the counter.
std::vector<float> dropout_mask_values(Dropout& dropout, Device& device, std::int64_t n) {
  return module_gradients(dropout, device, ones(static_cast<std::size_t>(n)), {n}, ones(static_cast<std::size_t>(n)))
      .output;
}

TEST(DropoutModule, InferenceIsTheIdentity) {
  auto device = make_cpu_device();
  Dropout dropout(0.5f);  // not even seeded: inference needs no mask
  Context ctx(*device);
  ctx.training = false;
  const Tensor x =
      Tensor::from_host(*device, std::vector<float>{1, 2, 3}, {3}, DType::kF32, MemoryCategory::kActivations);
  const Tensor y = dropout.forward(ctx, x);
  EXPECT_EQ(y.storage(), x.storage());
  EXPECT_EQ(y.to_host_f32(), x.to_host_f32());
  EXPECT_EQ(dropout.counter(), 0u);
}

TEST(DropoutModule, MaskIsAPureFunctionOfSeedNameCounterAndIndex) {
  auto device = make_cpu_device();
  constexpr std::int64_t kN = 1 << 16;
  constexpr float kP = 0.25f;
  Dropout a(kP), b(kP);
  a.seed(7, "h.0.drop");
  b.seed(7, "h.0.drop");
  const auto first = dropout_mask_values(a, *device, kN);
  EXPECT_EQ(a.counter(), 1u) << "one backward: the counter moves by one";
  EXPECT_EQ(dropout_mask_values(b, *device, kN), first) << "same seed, name and counter";
  // Every element is 0 or exactly 1 / (1 - p), about p of them 0, and each the function of its index.
  const float scale = 1.0f / (1.0f - kP);
  const DropoutMask mask = dropout_mask(0, kP);
  std::int64_t dropped = 0;
  Dropout c(kP);
  c.seed(7, "h.0.drop");
  const DropoutMask key = c.next_mask();
  for (std::int64_t i = 0; i < kN; ++i) {
    const bool kept = dropout_keeps(key.key, i, mask.threshold);
    ASSERT_EQ(first[i], kept ? scale : 0.0f) << "element " << i;
    dropped += !kept;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / kN, kP, 0.01) << "fraction dropped";
  // Another counter, name or seed: another mask.
  EXPECT_NE(dropout_mask_values(a, *device, kN), first) << "the next counter drew the same mask";
  Dropout other_name(kP), other_seed(kP);
  other_name.seed(7, "h.1.drop");
  other_seed.seed(8, "h.0.drop");
  EXPECT_NE(dropout_mask_values(other_name, *device, kN), first);
  EXPECT_NE(dropout_mask_values(other_seed, *device, kN), first);
  // Setting the counter reproduces a later mask: what a resumed run does.
  const auto second = [&] {
    Dropout d(kP);
    d.seed(7, "h.0.drop", 1);
    return dropout_mask_values(d, *device, kN);
  }();
  Dropout e(kP);
  e.seed(7, "h.0.drop");
  dropout_mask_values(e, *device, kN);
  EXPECT_EQ(dropout_mask_values(e, *device, kN), second);
}

TEST(DropoutModule, BackwardAppliesTheForwardMaskAndMatchesFiniteDifferences) {
  auto device = make_cpu_device();
  Sequential model(std::make_unique<Linear>(6, 8, true, 0.5f), std::make_unique<Dropout>(0.4f),
                   std::make_unique<Gelu>());
  EXPECT_EQ(seed_dropout(model, 3), 1);
  materialize_parameters(model, *device, 4);
  allocate_gradients(model, *device);
  const auto x = uniform_values(3 * 6, 91, -1.0f, 1.0f);
  const auto w = uniform_values(3 * 8, 92, -1.0f, 1.0f);
  // Each evaluation is a training forward whose state is dropped: the same mask throughout.
  expect_matches_finite_differences(model, *device, x, {3, 6}, w, "Linear/Dropout/GELU");
}

TEST(DropoutModule, RecomputedForwardDrawsTheFirstForwardsMask) {
  auto device = make_cpu_device();
  const auto x = uniform_values(64, 101, -1.0f, 1.0f);
  const auto w = uniform_values(64, 102, -1.0f, 1.0f);
  Dropout plain(0.5f);
  RecomputeWrapper wrapped(std::make_unique<Dropout>(0.5f));
  EXPECT_EQ(seed_dropout(wrapped, 5), 1);  // the wrapped Dropout's full name is the wrapper's: ""
  plain.seed(5, "");
  for (int step = 0; step < 3; ++step) {
    const auto p = module_gradients(plain, *device, x, {64}, w);
    const auto r = module_gradients(wrapped, *device, x, {64}, w);
    EXPECT_EQ(r.output, p.output) << "step " << step;
    EXPECT_EQ(r.dx, p.dx) << "step " << step << ": the recomputed forward drew another mask";
  }
}

TEST(DropoutModule, RefusesBadSettingsAndAnUnseededTrainingForward) {
  EXPECT_THROW(Dropout(1.0f), std::invalid_argument);
  EXPECT_THROW(Dropout(-0.1f), std::invalid_argument);
  EXPECT_THROW(Dropout(std::nanf("")), std::invalid_argument);
  auto device = make_cpu_device();
  Dropout unseeded(0.1f);
  Context ctx(*device);
  try {
    unseeded.forward(ctx, Tensor::zeros(*device, {4}, DType::kF32, MemoryCategory::kActivations));
    FAIL() << "an unseeded Dropout trained";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("call seed_dropout(model, seed)"), std::string::npos) << e.what();
  }
}

TEST(DropoutModule, Bf16KeepsTheF32MaskWithinOneRounding) {
  auto device = make_cpu_device();
  const auto x = bf16_rounded(uniform_values(300, 111, -3.0f, 3.0f));
  const auto w = bf16_rounded(uniform_values(300, 112, -3.0f, 3.0f));
  Dropout f32(0.3f), bf16(0.3f);
  f32.seed(9, "d");
  bf16.seed(9, "d");
  const auto a = module_gradients(f32, *device, x, {300}, w, DType::kF32);
  const auto b = module_gradients(bf16, *device, x, {300}, w, DType::kBF16);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(b.output[i] == 0.0f, a.output[i] == 0.0f) << "element " << i << " masked differently";
    EXPECT_NEAR(b.output[i], a.output[i], std::fabs(a.output[i]) / 256) << "output " << i;
    EXPECT_NEAR(b.dx[i], a.dx[i], std::fabs(a.dx[i]) / 256) << "dx " << i;
  }
}

TEST(DropoutModule, SimulatedGpuDrawsTheCpuMask) {
  auto cpu = make_cpu_device();
  auto gpu = make_device(DeviceChoice::kSimulatedGpu);
  const auto x = uniform_values(5000, 121, -1.0f, 1.0f);
  Dropout on_cpu(0.2f), on_gpu(0.2f);
  on_cpu.seed(1, "x");
  on_gpu.seed(1, "x");
  EXPECT_EQ(module_gradients(on_gpu, *gpu, x, {50, 100}, x).dx, module_gradients(on_cpu, *cpu, x, {50, 100}, x).dx);
}

}  // namespace
}  // namespace tessera
