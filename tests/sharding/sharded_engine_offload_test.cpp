// Offload to host memory through the Placement table, on the CPU device: the optimizer's state and
// master (stages 1-3) and the parameter shard (stage 3) live in pinned host memory, booked in the
// device's host tier; training is bit-identical to no offload. NVMe offload is refused by name.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include "core/setting_error.hpp"
#include "sharding/full_parameters.hpp"
#include "sharding_test_support.hpp"
#include "training/trainer.hpp"

namespace tessera::testing {
namespace {

struct OffloadRun {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> params;
  MemorySnapshot device, host;
};

OffloadRun run(ZeroStage stage, OffloadConfig offload) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = stage;
  config.offload = offload;
  config.precision.param_dtype = DType::kBF16;
  OffloadRun out;
  ShardedEngine engine(model, *device, world, config, kSeed);
  Trainer trainer(engine);
  for (int s = 0; s < 3; ++s) {
    out.losses.push_back(trainer.train_step({global_rows(*device, tiny_gpt(), s, world.rank() * 2, 2)}, kLr).loss);
  }
  out.params = gather_full_parameters(engine);
  out.device = device->memory().snapshot();
  out.host = device->memory(MemoryKind::kPinnedHost).snapshot();
  return out;
}

TEST(ShardedEngineOffload, HostPlacementTrainsBitIdentically) {
  OffloadConfig optimizer;
  optimizer.optimizer = OffloadTarget::kCpu;
  OffloadConfig both = optimizer;
  both.parameters = OffloadTarget::kCpu;
  struct Case {
    ZeroStage stage;
    OffloadConfig offload;
  };
  for (const Case& c : {Case{ZeroStage::kStage1, optimizer}, Case{ZeroStage::kStage2, optimizer},
                        Case{ZeroStage::kStage3, optimizer}, Case{ZeroStage::kStage3, both}}) {
    const std::string what = "ZeRO-" + std::to_string(zero_stage_number(c.stage)) + " offload " + c.offload.to_string();
    const OffloadRun plain = run(c.stage, {});
    const OffloadRun offloaded = run(c.stage, c.offload);
    EXPECT_EQ(offloaded.losses, plain.losses) << what;
    EXPECT_EQ(offloaded.params, plain.params) << what;
    // The optimizer state left the device entirely and sits in the host tier, same bytes.
    EXPECT_EQ(offloaded.device.current_of(MemoryCategory::kOptimizerState), 0) << what;
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kOptimizerState),
              plain.device.current_of(MemoryCategory::kOptimizerState))
        << what;
    const bool params_off = c.offload.parameters == OffloadTarget::kCpu;
    EXPECT_EQ(offloaded.device.current_of(MemoryCategory::kParameters),
              params_off ? 0 : plain.device.current_of(MemoryCategory::kParameters))
        << what;
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kParameters),
              params_off ? plain.device.current_of(MemoryCategory::kParameters) : 0)
        << what;
  }
}

TEST(ShardedEngineOffload, NvmeIsRefusedByName) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = ZeroStage::kStage3;
  config.offload.optimizer = OffloadTarget::kNvme;
  try {
    ShardedEngine engine(model, *device, world, config, kSeed);
    FAIL() << "NVMe offload was accepted";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "sharding.offload.optimizer");
    EXPECT_NE(std::string(e.what()).find("NVMe"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::testing
