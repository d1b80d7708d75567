// ShardedEngine equivalence: stages 0-3 against one process training the same global batch,
// bit-identity across stages, accumulation, bf16 reduce, uneven shards, hybrid groups, clipping.
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include "tessera/sharding/sharded_engine.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sharding_test_support.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr int kEquivalenceSteps = 5;
constexpr std::int64_t kEquivalenceGlobal = 8;

struct ShardedRun {
  RunResult result;
  std::vector<DType> reduce_dtypes;
  bool padded = false;  // some unit needed padding
};

ShardedRun sharded_run(ZeroStage stage, std::int64_t accumulation, MixedPrecision precision = {},
                       int hybrid_group = 0) {
  auto device = make_cpu_device();
  RecordingCommunicator world(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD));
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = stage;
  config.precision = precision;
  config.hybrid_group = hybrid_group;
  config.optimizer.adamw = test_adamw();
  config.grad_clip = kClip;
  ShardedRun run;
  {
    ShardedEngine engine(model, *device, world, config, kSeed);
    Trainer trainer(engine);
    const std::int64_t n = world.size(), micro = kEquivalenceGlobal / n / accumulation;
    for (int s = 0; s < kEquivalenceSteps; ++s) {
      std::vector<MicroBatch> batches;
      for (std::int64_t a = 0; a < accumulation; ++a) {
        // Global row layout: accumulation step a, then rank, then row (first_sample_index's order).
        batches.push_back(global_rows(*device, tiny_gpt(), s, a * micro * n + world.rank() * micro, micro));
      }
      const StepResult r = trainer.train_step(batches, kLr);
      run.result.losses.push_back(r.loss);
      run.result.norms.push_back(r.grad_norm);
    }
    const auto full = gather_full_parameters(engine);
    for (const NamedParameter& np : model.named_parameters()) run.result.params.push_back(full.at(np.name));
    for (const auto& unit : engine.units()) run.padded |= unit->layout().padded_numel() != unit->layout().numel();
  }
  run.reduce_dtypes = world.reduce_dtypes;
  return run;
}

void expect_close(const RunResult& actual, const RunResult& expected, double rel, const std::string& what) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size());
  for (std::size_t s = 0; s < expected.losses.size(); ++s) {
    EXPECT_NEAR(actual.losses[s], expected.losses[s], rel * std::abs(expected.losses[s]))
        << what << ": loss at step " << s << ", rank " << world_rank();
    EXPECT_NEAR(actual.norms[s], expected.norms[s], rel * expected.norms[s])
        << what << ": grad norm at step " << s << ", rank " << world_rank();
  }
  // Parameters: relative L2 error of the whole parameter vector. (Per element is not meaningful:
  // some gradients are pure round-off, e.g. the key bias, which softmax ignores, and Adam turns
  // round-off-sized gradients into lr-sized steps.)
  ASSERT_EQ(actual.params.size(), expected.params.size());
  double diff2 = 0.0, norm2 = 0.0;
  for (std::size_t p = 0; p < expected.params.size(); ++p) {
    for (std::size_t i = 0; i < expected.params[p].size(); ++i) {
      const double d = static_cast<double>(actual.params[p][i]) - expected.params[p][i];
      diff2 += d * d;
      norm2 += static_cast<double>(expected.params[p][i]) * expected.params[p][i];
    }
  }
  EXPECT_LE(std::sqrt(diff2 / norm2), rel)
      << what << ": relative L2 error of the final parameters, rank " << world_rank();
}

TEST(ShardedEngine, EveryStageMatchesOneProcessAndStagesAreBitIdentical) {
  const RunResult reference = reference_run(kEquivalenceSteps, kEquivalenceGlobal);
  const ShardedRun stage0 = sharded_run(ZeroStage::kStage0, 1);
  EXPECT_TRUE(stage0.padded) << "the tiny GPT should need padding at " << world_size() << " ranks";
  expect_close(stage0.result, reference, 1e-6, "stage 0 vs one process");
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const ShardedRun run = sharded_run(stage, 1);
    const std::string what = "stage " + std::to_string(zero_stage_number(stage));
    expect_close(run.result, reference, 1e-6, what + " vs one process");
    expect_identical(run.result, stage0.result, what + " vs stage 0");
  }
  // Clipping is active in these steps: the first norms exceed the clip.
  EXPECT_GT(reference.norms[0], kClip);
}

TEST(ShardedEngine, AccumulationMatchesOneLargeBatch) {
  const RunResult reference = reference_run(kEquivalenceSteps, kEquivalenceGlobal);
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const ShardedRun run = sharded_run(stage, 2);  // micro kEquivalenceGlobal / ranks / 2
    expect_close(run.result, reference, 1e-6,
                 "stage " + std::to_string(zero_stage_number(stage)) + " with accumulation 2");
  }
}

TEST(ShardedEngine, Bf16ReduceSendsBf16AndStaysCloseToF32) {
  const RunResult reference = reference_run(kEquivalenceSteps, kEquivalenceGlobal);
  MixedPrecision bf16_reduce;
  bf16_reduce.reduce_dtype = DType::kBF16;
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const ShardedRun run = sharded_run(stage, 1, bf16_reduce);
    ASSERT_FALSE(run.reduce_dtypes.empty());
    for (DType d : run.reduce_dtypes) EXPECT_EQ(d, DType::kBF16) << "gradient collective dtype";
    // bf16 keeps 8 significant bits: gradients carry ~0.4% relative error; after 5 Adam steps the
    // losses stay within 1e-3 relative and the parameters within 5e-3 relative L2.
    for (std::size_t s = 0; s < reference.losses.size(); ++s) {
      EXPECT_NEAR(run.result.losses[s], reference.losses[s], 1e-3 * reference.losses[s]) << "step " << s;
    }
    expect_close(RunResult{{}, {}, run.result.params}, RunResult{{}, {}, reference.params}, 5e-3, "bf16 reduce params");
  }
  const ShardedRun f32 = sharded_run(ZeroStage::kStage2, 1);
  for (DType d : f32.reduce_dtypes) EXPECT_EQ(d, DType::kF32);
}

// The gradients travel in half precision but are reduced as the collective in that dtype reduces
// them (rank order, f32 sums, one rounding) at every stage, so stages 1-3 reproduce stage 0 exactly.
TEST(ShardedEngine, HalfPrecisionReduceStagesAreBitIdenticalToStage0) {
  for (DType wire : {DType::kBF16, DType::kF16}) {
    MixedPrecision precision;
    precision.reduce_dtype = wire;
    const ShardedRun stage0 = sharded_run(ZeroStage::kStage0, 1, precision);
    for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
      const ShardedRun run = sharded_run(stage, 1, precision);
      expect_identical(
          run.result, stage0.result,
          std::string(dtype_name(wire)) + " reduce, stage " + std::to_string(zero_stage_number(stage)) + " vs stage 0");
    }
  }
}

TEST(ShardedEngine, HybridGroupsMatchOneProcess) {
  if (world_size() != 4) GTEST_SKIP() << "hybrid 2 x 2 needs 4 ranks";
  const RunResult reference = reference_run(kEquivalenceSteps, kEquivalenceGlobal);
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage3}) {
    const ShardedRun run = sharded_run(stage, 1, {}, 2);
    expect_close(run.result, reference, 1e-6, "hybrid 2x2 stage " + std::to_string(zero_stage_number(stage)));
  }
  // bf16 on the wire within the shard groups and across them.
  MixedPrecision bf16_reduce;
  bf16_reduce.reduce_dtype = DType::kBF16;
  const ShardedRun bf16 = sharded_run(ZeroStage::kStage3, 1, bf16_reduce, 2);
  for (DType d : bf16.reduce_dtypes) EXPECT_EQ(d, DType::kBF16) << "gradient collective dtype";
  expect_close(RunResult{{}, {}, bf16.result.params}, RunResult{{}, {}, reference.params}, 5e-3,
               "hybrid 2x2 stage 3, bf16 reduce, params");
}

TEST(ShardedEngine, Fp16LossScalerSkipsAStepWhenOneRankOverflows) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = ZeroStage::kStage2;
  config.precision.reduce_dtype = DType::kF16;  // turns dynamic loss scaling on (kAuto)
  config.loss_scaler.hysteresis = 1;
  ShardedEngine engine(model, *device, world, config, kSeed);
  ASSERT_NE(engine.loss_scaler(), nullptr);
  const float initial_scale = engine.loss_scale();
  EXPECT_EQ(initial_scale, 65536.0f);
  const auto before = gather_full_parameters(engine);

  // One micro-batch by hand, then an inf planted in rank 1's gradient shard only.
  Context ctx(*device);
  const MicroBatch batch = global_rows(*device, tiny_gpt(), 0, world.rank() * 2, 2);
  engine.zero_grad();
  CrossEntropyLoss loss;
  Tensor logits = engine.forward(ctx, batch.inputs);
  loss.forward(ctx, logits, batch.targets);
  engine.backward(ctx, loss.backward(ctx, engine.loss_scale()), GradSync::kReduce);
  if (world.rank() == 1) {
    Tensor g = engine.units()[1]->reduced_grads();
    g.data_as<float>()[0] = INFINITY;
  }
  const OptimizerStepResult skipped = engine.step(kLr);
  EXPECT_TRUE(skipped.skipped) << "rank " << world.rank() << " did not skip the overflowing step";
  EXPECT_EQ(engine.loss_scale(), initial_scale / 2) << "rank " << world.rank();
  EXPECT_EQ(engine.optimizer_steps(), 0);
  const auto after_skip = gather_full_parameters(engine);
  for (const auto& [name, values] : before)
    EXPECT_EQ(after_skip.at(name), values) << name << " changed by a skipped step";

  // The next, clean step is taken, with the gradients unscaled (the norm is the true norm).
  const StepResult taken = Trainer(engine).train_step({batch}, kLr);
  EXPECT_FALSE(taken.skipped);
  EXPECT_EQ(engine.optimizer_steps(), 1);
  EXPECT_TRUE(std::isfinite(taken.grad_norm));
  EXPECT_LT(taken.grad_norm, 100.0) << "the loss scale was not divided out of the norm";
}

}  // namespace
}  // namespace tessera::testing
