// An inference engine (EngineUse::kInference) holds the parameters and no gradient buffers or
// optimizer state; its forward gives the training engine's logits bit for bit at every stage;
// backward and step are refused; it loads the weights of a checkpoint written by any optimizer
// (8-bit AdamW included) on another rank count.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <stdexcept>

#include "sharding_test_support.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

std::vector<float> logits_of(ShardedEngine& engine, Device& device) {
  Context ctx(device);
  ctx.training = false;
  const MicroBatch batch = global_rows(device, tiny_gpt(), 0, 0, 2);
  return engine.forward(ctx, batch.inputs).to_host_f32();
}

TEST(InferenceEngine, HoldsNoGradientsOrOptimizerStateAndComputesTheSameLogits) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    auto train_device = make_cpu_device(), infer_device = make_cpu_device();
    MpiCommunicator world(MPI_COMM_WORLD);
    Gpt train_model(tiny_gpt()), infer_model(tiny_gpt());
    ShardingConfig config;
    config.stage = stage;
    ShardedEngine training(train_model, *train_device, world, config, kSeed);
    config.use = EngineUse::kInference;
    ShardedEngine inference(infer_model, *infer_device, world, config, kSeed);
    const MemoryTracker& trained = train_device->memory();
    const MemoryTracker& inferred = infer_device->memory();
    EXPECT_GT(trained.current(MemoryCategory::kGradients), 0);
    EXPECT_EQ(inferred.current(MemoryCategory::kGradients), 0) << "stage " << zero_stage_number(stage);
    EXPECT_GT(trained.current(MemoryCategory::kOptimizerState), 0);
    EXPECT_EQ(inferred.current(MemoryCategory::kOptimizerState), 0) << "f32 parameters are the master";
    EXPECT_EQ(logits_of(inference, *infer_device), logits_of(training, *train_device));
    Context ctx(*infer_device);
    EXPECT_THROW(inference.step(1e-3f), std::logic_error);
    EXPECT_THROW(inference.gradient_norm(), std::logic_error);
  }
}

TEST(InferenceEngine, LoadsTheWeightsOfAnEightBitAdamWCheckpoint) {
  ScratchDir scratch("inference_engine");
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::string dir = broadcast_string(world, scratch.path().string(), 0) + "/run";
  auto train_device = make_cpu_device();
  Gpt train_model(tiny_gpt());
  ShardingConfig config;
  config.stage = ZeroStage::kStage2;
  config.optimizer.kind = OptimizerKind::kAdamW8bit;
  config.optimizer.block_size = 256;
  ShardedEngine training(train_model, *train_device, world, config, kSeed);
  Trainer trainer(training);
  trainer.train_step({global_rows(*train_device, tiny_gpt(), 0, world.rank() * 2, 2)}, kLr);
  TrainingProgress progress;
  progress.step = 1;
  save_checkpoint(training, world, dir, progress, RunConfig{});
  const std::vector<float> expected = logits_of(training, *train_device);

  auto infer_device = make_cpu_device();
  Gpt infer_model(tiny_gpt());
  ShardingConfig infer;
  infer.stage = ZeroStage::kStage3;
  infer.use = EngineUse::kInference;
  ShardedEngine inference(infer_model, *infer_device, world, infer, /*seed=*/99);
  load_checkpoint(inference, world, dir + "/step_0000001", RunConfig{});
  EXPECT_EQ(logits_of(inference, *infer_device), expected);
}

}  // namespace
}  // namespace tessera::testing
