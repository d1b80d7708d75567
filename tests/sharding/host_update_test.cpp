// The host's update of optimizer state offloaded from a discrete device, on the simulated GPU: the
// engine places a pinned copy of each unit's reduced gradients beside the offloaded state (and no
// second buffer for the parameters that go back), copies exactly the optimizer range each way once
// per step, and counts those bytes, the elements updated and the host's time (HostUpdateStats);
// training is bit-identical to the run with everything on the device, at ZeRO 1-3.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>

#include "sharding_test_support.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

struct DiscreteRun {
  std::vector<float> losses;
  HostUpdateStats stats;  // of the last step
  std::int64_t range_elements = 0;
  std::int64_t f32_range_elements = 0;  // of them, in the units kept in f32 (norms)
  MemorySnapshot host;
  bool update_on_host = false;
};

DiscreteRun run_discrete(ZeroStage stage, OffloadTarget optimizer) {
  SimulatedGpuDevice device;
  MpiCommunicator host_world(MPI_COMM_WORLD);
  const std::unique_ptr<Communicator> world = make_device_world(device, host_world, CommOptions{});
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = stage;
  config.precision.param_dtype = DType::kBF16;
  config.offload.optimizer = optimizer;
  ShardedEngine engine(model, device, *world, config, kSeed);
  Trainer trainer(engine);
  DiscreteRun out;
  const std::int64_t rows = 4 / world->size();
  for (int s = 0; s < 3; ++s) {
    engine.reset_host_update_stats();
    out.losses.push_back(
        trainer.train_step({global_rows(device, tiny_gpt(), s, world->rank() * rows, rows)}, kLr).loss);
  }
  out.stats = engine.host_update_stats();
  for (const auto& unit : engine.units()) {
    out.range_elements += unit->optimizer_range().count;
    if (unit->name().ends_with(" (f32)")) out.f32_range_elements += unit->optimizer_range().count;
  }
  out.host = device.memory(MemoryKind::kPinnedHost).snapshot();
  out.update_on_host = engine.placement().update_on_host;
  return out;
}

TEST(HostUpdate, CopiesTheOptimizerRangeEachWayOncePerStepAndMatchesTheDeviceBitForBit) {
  for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    const std::string where = "ZeRO-" + std::to_string(zero_stage_number(stage));
    const DiscreteRun resident = run_discrete(stage, OffloadTarget::kNone);
    const DiscreteRun offloaded = run_discrete(stage, OffloadTarget::kCpu);
    EXPECT_FALSE(resident.update_on_host) << where;
    EXPECT_EQ(resident.stats.bytes_to_host, 0) << where;
    ASSERT_TRUE(offloaded.update_on_host) << where;
    EXPECT_EQ(offloaded.losses, resident.losses) << where;
    const std::int64_t n = offloaded.range_elements;
    EXPECT_EQ(offloaded.stats.updated_elements, n) << where;
    EXPECT_EQ(offloaded.stats.bytes_to_host, 4 * n) << where << ": the f32 gradients";
    const std::int64_t f32 = offloaded.f32_range_elements;
    EXPECT_GT(f32, 0) << where;
    EXPECT_EQ(offloaded.stats.bytes_to_device, 2 * (n - f32) + 4 * f32) << where << ": the bf16 parameters and the f32 norms";
    EXPECT_GT(offloaded.stats.update_seconds, 0.0) << where;
    // Pinned: the gradient copy (4 bytes) beside master, m and v (12 bytes); the parameters return
    // through the gradient copy's bytes.
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kGradients), 4 * n) << where;
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kParameters), 0) << where;
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kOptimizerState), 12 * n) << where;
  }
}

}  // namespace
}  // namespace tessera::testing
