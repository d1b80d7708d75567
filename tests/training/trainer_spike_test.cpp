// The Trainer with a SpikeDetector across ranks: a model trained on a few tokens meets a batch of
// tokens it never saw — a planted loss spike — and every rank skips that step (no parameter moves,
// no optimizer step counted), then goes on training normally.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/sharding/sharding_test_support.hpp"

namespace tessera::testing {
namespace {

MicroBatch tokens_from(Device& device, std::int32_t first, std::int32_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(2 * 6), tg(in.size());
  for (auto& t : in) t = first + static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(count)));
  for (std::size_t i = 0; i < in.size(); ++i) tg[i] = in[(i + 1) % in.size()];
  return {Tensor::from_host_i32(device, in, {2, 6}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {2, 6}, MemoryCategory::kWorkspace)};
}

TEST(TrainerSpike, APlantedSpikeIsSkippedOnEveryRank) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  GptConfig gpt = tiny_gpt();
  gpt.vocab_size = 64;
  Gpt model(gpt);
  ShardingConfig config;
  config.stage = ZeroStage::kStage2;
  ShardedEngine engine(model, *device, world, config, kSeed);
  Trainer trainer(engine);
  SpikeDetector detector({/*window*/ 20, /*warmup*/ 10, /*z*/ 6.0});
  trainer.set_spike_detector(&detector);
  for (int s = 0; s < 30; ++s) {
    const StepResult r = trainer.train_step({tokens_from(*device, 0, 4, 100 * s + world.rank())}, 1e-2f);
    ASSERT_FALSE(r.spike) << "step " << s << ": " << detector.last_reason();
  }
  const auto before = gather_full_parameters(engine);
  const std::int64_t steps_before = engine.optimizer_steps();
  const StepResult spike = trainer.train_step({tokens_from(*device, 40, 20, 7 + world.rank())}, 1e-2f);
  EXPECT_TRUE(spike.spike) << "rank " << world.rank() << ": loss " << spike.loss;
  EXPECT_TRUE(spike.skipped);
  EXPECT_EQ(engine.optimizer_steps(), steps_before);
  EXPECT_EQ(gather_full_parameters(engine), before) << "a skipped spike moved parameters";
  const StepResult next = trainer.train_step({tokens_from(*device, 0, 4, 999 + world.rank())}, 1e-2f);
  EXPECT_FALSE(next.skipped) << detector.last_reason();
  EXPECT_EQ(engine.optimizer_steps(), steps_before + 1);
}

}  // namespace
}  // namespace tessera::testing
