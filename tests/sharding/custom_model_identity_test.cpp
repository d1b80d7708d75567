// Bit-identity across ZeRO stages for a model the project does not ship (FeedForwardLm: embedding,
// LayerNorm, two Linear + GELU, Linear — the embedding report's model, calling its children through
// their slots), trained on 2 ranks as an embedding program trains it (Trainer over the engine).
//
// With one micro-batch per step the four stages give the same losses, gradient norms and final
// parameters bit for bit. With accumulation 2 the stages fall into the engine's two reduction
// schedules (sharding/sharded_engine.hpp): stages 0-1 add the two micro-batches' gradients on each
// rank and then reduce, ((a1 + a2) + (b1 + b2)) / 2 for ranks a and b; stages 2-3 reduce every
// micro-batch and add the reduced shards, (a1 + b1) / 2 + (a2 + b2) / 2. Within a schedule the bits
// are the same; across them the f32 sums are rounded in another order, so the two pairs agree to
// round-off: here the gradient norms differ from the first step in their eighth digit
// (0.0042153435599 against 0.0042153434854), which is how a loss logged to six decimals can differ
// by one in its last digit at one step (2.041975 against 2.041976) and agree at the others.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "feed_forward_lm_test_support.hpp"
#include "sharding_test_support.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr int kIdentitySteps = 6;
constexpr std::int64_t kIdentityGlobal = 8;  // rows per optimizer step, over all ranks and micro-batches

// Rows [first, first + count) of the global batch of `step`, a function of (step, row) only.
MicroBatch identity_rows(Device& device, const FeedForwardLmConfig& c, int step, std::int64_t first,
                         std::int64_t count) {
  std::vector<std::int32_t> in, tg;
  for (std::int64_t r = first; r < first + count; ++r) {
    Rng rng(static_cast<std::uint64_t>(step) * 6151u + static_cast<std::uint64_t>(r));
    for (std::int64_t t = 0; t < c.seq_len; ++t) {
      in.push_back(static_cast<std::int32_t>(rng.below(c.vocab)));
      tg.push_back(static_cast<std::int32_t>(rng.below(c.vocab)));
    }
  }
  return {Tensor::from_host_i32(device, in, {count, c.seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {count, c.seq_len}, MemoryCategory::kWorkspace)};
}

RunResult custom_model_run(ZeroStage stage, std::int64_t accumulation) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  const FeedForwardLmConfig c;
  FeedForwardLm model(c, ChildCalls::kThroughSlots);
  ShardingConfig config;
  config.stage = stage;
  config.optimizer.adamw = test_adamw();
  config.grad_clip = kClip;
  RunResult out;
  ShardedEngine engine(model, *device, world, config, kSeed);
  Trainer trainer(engine);
  const std::int64_t n = world.size(), micro = kIdentityGlobal / n / accumulation;
  for (int s = 0; s < kIdentitySteps; ++s) {
    std::vector<MicroBatch> batches;
    for (std::int64_t a = 0; a < accumulation; ++a) {
      batches.push_back(identity_rows(*device, c, s, a * micro * n + world.rank() * micro, micro));
    }
    const StepResult r = trainer.train_step(batches, 1e-2f);
    out.losses.push_back(r.loss);
    out.norms.push_back(r.grad_norm);
  }
  const auto full = gather_full_parameters(engine);
  for (const NamedParameter& np : model.named_parameters()) out.params.push_back(full.at(np.name));
  return out;
}

std::string stage_name(ZeroStage stage, std::int64_t accumulation) {
  return "ZeRO-" + std::to_string(zero_stage_number(stage)) + ", accumulation " + std::to_string(accumulation);
}

TEST(CustomModelIdentity, OneMicroBatchEveryStageIsBitIdentical) {
  const RunResult stage0 = custom_model_run(ZeroStage::kStage0, 1);
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    expect_identical(custom_model_run(stage, 1), stage0, stage_name(stage, 1) + " vs ZeRO-0");
  }
}

TEST(CustomModelIdentity, WithAccumulationEachReductionScheduleIsBitIdenticalAndTheTwoAgree) {
  const RunResult stage0 = custom_model_run(ZeroStage::kStage0, 2);
  expect_identical(custom_model_run(ZeroStage::kStage1, 2), stage0, stage_name(ZeroStage::kStage1, 2) + " vs ZeRO-0");
  const RunResult stage2 = custom_model_run(ZeroStage::kStage2, 2);
  expect_identical(custom_model_run(ZeroStage::kStage3, 2), stage2, stage_name(ZeroStage::kStage3, 2) + " vs ZeRO-2");
  for (std::size_t s = 0; s < stage0.losses.size(); ++s) {
    EXPECT_NEAR(stage2.losses[s], stage0.losses[s], 1e-5 * stage0.losses[s]) << "step " << s;
    EXPECT_NEAR(stage2.norms[s], stage0.norms[s], 1e-5 * stage0.norms[s]) << "step " << s;
  }
}

}  // namespace
}  // namespace tessera::testing
