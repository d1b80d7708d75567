// Offload through the Placement table, on the CPU device. To host memory: the optimizer's state
// and master (stages 1-3) and the parameter shard (stage 3) live in pinned host memory, booked in
// the device's host tier. To NVMe: they live in each rank's offload file, streamed in blocks that
// do not divide the shards, by io_uring or the buffered fallback, with f32 or bf16 parameters and
// AdamW or 8-bit AdamW; booked in the NVMe tier. Either way training is bit-identical to no offload.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include "sharding_test_support.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/runtime/offload/nvme_store.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

struct OffloadRun {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> params;
  MemorySnapshot device, host, nvme;
  std::int64_t bytes_written = 0;
  // The f32 master of the units kept in f32 (norms: their stored parameters are the master unless
  // the optimizer's state lives in another memory).
  std::int64_t f32_unit_master_bytes = 0;
};

OffloadRun run(ZeroStage stage, OffloadConfig offload, DType param_dtype = DType::kBF16,
               OptimizerKind optimizer = OptimizerKind::kAdamW) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = stage;
  config.offload = offload;
  config.precision.param_dtype = param_dtype;
  config.optimizer.kind = optimizer;
  config.optimizer.block_size = 256;
  OffloadRun out;
  ShardedEngine engine(model, *device, world, config, kSeed);
  Trainer trainer(engine);
  for (int s = 0; s < 3; ++s) {
    out.losses.push_back(trainer.train_step({global_rows(*device, tiny_gpt(), s, world.rank() * 2, 2)}, kLr).loss);
  }
  out.params = gather_full_parameters(engine);
  out.device = device->memory().snapshot();
  out.host = device->memory(MemoryKind::kPinnedHost).snapshot();
  out.nvme = device->memory(MemoryKind::kNvme).snapshot();
  if (engine.nvme_store() != nullptr) out.bytes_written = engine.nvme_store()->stats().bytes_written;
  for (const auto& unit : engine.units()) {
    if (unit->name().ends_with(" (f32)") && !unit->placement().master_is_params) out.f32_unit_master_bytes += 4 * unit->optimizer_range().count;
  }
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
    // The optimizer state left the device entirely and sits in the host tier, same bytes — plus the
    // f32 units' master, which on the device was their stored parameters.
    EXPECT_EQ(offloaded.device.current_of(MemoryCategory::kOptimizerState), 0) << what;
    EXPECT_EQ(offloaded.f32_unit_master_bytes > 0, c.offload.parameters == OffloadTarget::kNone) << what;
    EXPECT_EQ(offloaded.host.current_of(MemoryCategory::kOptimizerState),
              plain.device.current_of(MemoryCategory::kOptimizerState) + offloaded.f32_unit_master_bytes)
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

TEST(ShardedEngineOffload, NvmeTrainsBitIdentically) {
  ScratchDir dir("engine_nvme");
  OffloadConfig optimizer;
  optimizer.optimizer = OffloadTarget::kNvme;
  optimizer.nvme.path = dir.path().string();
  optimizer.nvme.block_elements = 64;  // many blocks per shard, the last one partial
  optimizer.nvme.buffers = 3;
  OffloadConfig both = optimizer;
  both.parameters = OffloadTarget::kNvme;
  OffloadConfig params_only = both;
  params_only.optimizer = OffloadTarget::kNone;
  OffloadConfig buffered = both;
  buffered.nvme.io = OffloadIo::kBuffered;
  buffered.nvme.buffers = 2;
  struct Case {
    ZeroStage stage;
    OffloadConfig offload;
    DType params;
    const char* what;
  };
  for (const Case& c : {Case{ZeroStage::kStage1, optimizer, DType::kBF16, "stage 1 optimizer"},
                        Case{ZeroStage::kStage2, optimizer, DType::kF32, "stage 2 optimizer, f32 params"},
                        Case{ZeroStage::kStage3, optimizer, DType::kBF16, "stage 3 optimizer"},
                        Case{ZeroStage::kStage3, both, DType::kBF16, "stage 3 optimizer and params"},
                        Case{ZeroStage::kStage3, both, DType::kF32, "stage 3 both, f32 params = master in the file"},
                        Case{ZeroStage::kStage3, params_only, DType::kBF16, "stage 3 params only"},
                        Case{ZeroStage::kStage3, buffered, DType::kBF16, "stage 3 both, buffered pread/pwrite"}}) {
    const OffloadRun plain = run(c.stage, {}, c.params);
    const OffloadRun offloaded = run(c.stage, c.offload, c.params);
    EXPECT_EQ(offloaded.losses, plain.losses) << c.what;
    EXPECT_EQ(offloaded.params, plain.params) << c.what;
    EXPECT_GT(offloaded.bytes_written, 0) << c.what;
    if (c.offload.optimizer == OffloadTarget::kNvme) {
      EXPECT_EQ(offloaded.device.current_of(MemoryCategory::kOptimizerState), 0) << c.what;
      // In the file: at least the bytes the state took on the device (chunks are padded to 4 KiB).
      EXPECT_GE(offloaded.nvme.current_of(MemoryCategory::kOptimizerState),
                plain.device.current_of(MemoryCategory::kOptimizerState))
          << c.what;
    }
    if (c.offload.parameters == OffloadTarget::kNvme) {
      EXPECT_EQ(offloaded.device.current_of(MemoryCategory::kParameters), 0) << c.what;
      EXPECT_GT(offloaded.nvme.current_of(MemoryCategory::kParameters), 0) << c.what;
    }
  }
}

TEST(ShardedEngineOffload, NvmeRunsEightBitAdamW) {
  ScratchDir dir("engine_nvme_8bit");
  OffloadConfig both;
  both.optimizer = OffloadTarget::kNvme;
  both.parameters = OffloadTarget::kNvme;
  both.nvme.path = dir.path().string();
  both.nvme.block_elements = 512;  // two quantization blocks per streamed block
  const OffloadRun plain = run(ZeroStage::kStage3, {}, DType::kBF16, OptimizerKind::kAdamW8bit);
  const OffloadRun offloaded = run(ZeroStage::kStage3, both, DType::kBF16, OptimizerKind::kAdamW8bit);
  EXPECT_EQ(offloaded.losses, plain.losses);
  EXPECT_EQ(offloaded.params, plain.params);
}

TEST(ShardedEngineOffload, NvmeBlockMustHoldWholeQuantizationBlocks) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = ZeroStage::kStage2;
  config.optimizer.kind = OptimizerKind::kAdamW8bit;
  config.optimizer.block_size = 256;
  config.offload.optimizer = OffloadTarget::kNvme;
  config.offload.nvme.path = "/tmp";
  config.offload.nvme.block_elements = 1000;
  try {
    ShardedEngine engine(model, *device, world, config, kSeed);
    FAIL() << "a block of 1000 elements was accepted for 8-bit blocks of 256";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "offload.block");
    EXPECT_NE(std::string(e.what()).find("multiple of 256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::testing
