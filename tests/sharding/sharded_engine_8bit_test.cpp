// 8-bit AdamW in the sharded engine: ZeRO stages 0-3 give bit-identical losses and parameters (the
// blocks sit at the same flat positions at every stage, shards being whole blocks); the optimizer
// state takes 2 bytes per element plus 8 per block instead of 8; training follows f32 AdamW
// closely.
// tessera-test-ranks: 2 4
#include <gtest/gtest.h>

#include <cmath>

#include "sharding_test_support.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr std::int64_t kBlock = 256;

struct TrainingRun {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> params;
  std::int64_t optimizer_bytes = 0, range_elements = 0;
};

// Wider than the tiny GPT, so units hold many blocks and padding to whole blocks is a few percent.
GptConfig blocky_gpt() { return {/*vocab*/ 64, /*seq*/ 8, /*layers*/ 2, /*heads*/ 4, /*dim*/ 64}; }

TrainingRun train(ZeroStage stage, OptimizerKind kind, int steps, const GptConfig& gpt = tiny_gpt()) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(gpt);
  ShardingConfig config;
  config.stage = stage;
  config.optimizer.kind = kind;
  config.optimizer.block_size = kBlock;
  config.optimizer.adamw = test_adamw();
  config.grad_clip = kClip;
  TrainingRun run;
  ShardedEngine engine(model, *device, world, config, kSeed);
  Trainer trainer(engine);
  for (int s = 0; s < steps; ++s) {
    const MicroBatch batch = global_rows(*device, gpt, s, world.rank() * 2, 2);
    run.losses.push_back(trainer.train_step({batch}, kLr).loss);
  }
  run.params = gather_full_parameters(engine);
  run.optimizer_bytes = device->memory().current(MemoryCategory::kOptimizerState);
  for (const auto& unit : engine.units()) run.range_elements += unit->optimizer_range().count;
  return run;
}

TEST(ShardedEngine8bit, StagesAreBitIdentical) {
  const TrainingRun stage0 = train(ZeroStage::kStage0, OptimizerKind::kAdamW8bit, 6);
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const TrainingRun run = train(stage, OptimizerKind::kAdamW8bit, 6);
    const std::string what =
        "ZeRO-" + std::to_string(zero_stage_number(stage)) + " vs ZeRO-0, rank " + std::to_string(world_rank());
    EXPECT_EQ(run.losses, stage0.losses) << what;
    EXPECT_EQ(run.params, stage0.params) << what;
  }
}

TEST(ShardedEngine8bit, StateIsTwoBytesPerElementPlusScales) {
  // f32 parameters are the master: optimizer state is exactly m and v codes plus two f32 scales
  // per block, over this rank's (block-aligned) optimizer range.
  const TrainingRun run = train(ZeroStage::kStage2, OptimizerKind::kAdamW8bit, 1, blocky_gpt());
  ASSERT_EQ(run.range_elements % kBlock, 0);
  EXPECT_EQ(run.optimizer_bytes, 2 * run.range_elements + 8 * (run.range_elements / kBlock)) << "rank " << world_rank();
  const TrainingRun f32 = train(ZeroStage::kStage2, OptimizerKind::kAdamW, 1, blocky_gpt());
  EXPECT_LT(run.optimizer_bytes * 3, f32.optimizer_bytes)
      << "8-bit state should be about a quarter of f32 AdamW's, rank " << world_rank();
}

TEST(ShardedEngine8bit, TrainsLikeF32AdamW) {
  const TrainingRun eight = train(ZeroStage::kStage3, OptimizerKind::kAdamW8bit, 12, blocky_gpt());
  const TrainingRun f32 = train(ZeroStage::kStage3, OptimizerKind::kAdamW, 12, blocky_gpt());
  for (std::size_t s = 0; s < f32.losses.size(); ++s) {
    EXPECT_NEAR(eight.losses[s], f32.losses[s], 0.02 * f32.losses[s]) << "step " << s;
  }
}

}  // namespace
}  // namespace tessera::testing
