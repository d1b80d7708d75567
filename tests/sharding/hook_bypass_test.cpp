// A module run past its slot's hooks is caught at the first step, at every stage: the embedding
// report's model (FeedForwardLm) whose root calls Linear::forward_gelu on `Linear&`s kept from before
// the engine wrapped it. Without the engine's access guard ZeRO-3 failed with "parameter 'bias' has
// no storage: call materialize_parameters() or wrap the model in an engine" (the wrong fix) and
// ZeRO-0 trained without a word while fc1's and fc2's gradients were never reduced across ranks. Now
// every stage throws a HookBypassError naming the module, the parameter and the way to call it; the
// same model calling its children through their slots trains, and between the engine's calls the
// parameters stay bound as the stage keeps them.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feed_forward_lm_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr std::int64_t kBypassRows = 2;  // per rank

// This rank's micro-batch: ids below the vocabulary, rank-dependent.
MicroBatch bypass_batch(Device& device, const FeedForwardLmConfig& c, int rank) {
  Rng rng(101 + static_cast<std::uint64_t>(rank));
  std::vector<std::int32_t> in, tg;
  for (std::int64_t i = 0; i < kBypassRows * c.seq_len; ++i) {
    in.push_back(static_cast<std::int32_t>(rng.below(c.vocab)));
    tg.push_back(static_cast<std::int32_t>(rng.below(c.vocab)));
  }
  return {Tensor::from_host_i32(device, in, {kBypassRows, c.seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {kBypassRows, c.seq_len}, MemoryCategory::kWorkspace)};
}

ShardingConfig bypass_config(ZeroStage stage) {
  ShardingConfig config;
  config.stage = stage;
  return config;
}

// The message of the HookBypassError one training step of `calls` at `stage` throws ("" when none).
std::string bypass_error(ZeroStage stage, ChildCalls calls) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  const FeedForwardLmConfig c;
  FeedForwardLm model(c, calls);
  ShardedEngine engine(model, *device, world, bypass_config(stage), 5);
  Trainer trainer(engine);
  try {
    trainer.train_step({bypass_batch(*device, c, world.rank())}, 1e-3f);
  } catch (const HookBypassError& e) {
    return e.what();
  }
  return "";
}

TEST(HookBypass, AChildCalledPastItsSlotIsNamedAtEveryStage) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const std::string what = "ZeRO-" + std::to_string(zero_stage_number(stage));
    const std::string message = bypass_error(stage, ChildCalls::kPastSlots);
    ASSERT_FALSE(message.empty()) << what << ": the step ran past fc1's hooks without an error";
    for (const std::string& part :
         {std::string("ShardedEngine::forward: module 'fc1' (Linear) ran past its slot's hooks"),
          std::string("parameter 'fc1.weight'"), std::string("outside the hooks of 'fc1'"), what,
          std::string("slot->forward(ctx, x)"), std::string("ModuleSlot&"), std::string("unit_policy")}) {
      EXPECT_NE(message.find(part), std::string::npos) << what << ": no \"" << part << "\" in\n" << message;
    }
    EXPECT_EQ(message.find("materialize_parameters"), std::string::npos) << what << ": the wrong fix\n" << message;
  }
}

TEST(HookBypass, TheSameModelThroughItsSlotsTrainsAndStaysBoundBetweenCalls) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    const std::string what = "ZeRO-" + std::to_string(zero_stage_number(stage));
    EXPECT_EQ(bypass_error(stage, ChildCalls::kThroughSlots), "") << what;
  }
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  const FeedForwardLmConfig c;
  FeedForwardLm model(c, ChildCalls::kThroughSlots);
  ShardedEngine engine(model, *device, world, bypass_config(ZeroStage::kStage0), 5);
  Trainer trainer(engine);
  trainer.train_step({bypass_batch(*device, c, world.rank())}, 1e-3f);
  // Stages 0-2 keep the parameters bound between the engine's calls (sampling, exports read them).
  for (const NamedParameter& np : model.named_parameters()) {
    EXPECT_TRUE(np.parameter->value.defined()) << np.name << " unbound after the step";
    EXPECT_TRUE(np.parameter->grad.defined()) << np.name << "'s gradient unbound after the step";
  }
}

}  // namespace
}  // namespace tessera::testing
