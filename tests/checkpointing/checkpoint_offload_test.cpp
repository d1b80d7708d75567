// Checkpoints of NVMe-offloaded runs: the state is read from the offload files when saving and
// written into them when loading, so a run that saves with offload and one that resumes without it
// (and the other way round) continue exactly as the run that never stopped, at ZeRO-2 (optimizer
// state in files) and ZeRO-3 (optimizer state and parameter shards in files).
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

constexpr int kOffloadSaveAt = 2;
constexpr int kOffloadSteps = 4;

OffloadConfig nvme_offload(const std::filesystem::path& dir, bool params) {
  OffloadConfig o;
  o.optimizer = OffloadTarget::kNvme;
  if (params) o.parameters = OffloadTarget::kNvme;
  o.nvme.path = dir.string();
  o.nvme.block_elements = 64;  // many blocks, partial ones at the ends
  return o;
}

TEST(CheckpointOffload, SavesFromAndResumesIntoOffloadFiles) {
  MpiCommunicator world(MPI_COMM_WORLD);
  ScratchDir files("ckpt_offload");  // this rank's offload files
  MixedPrecision bf16;
  bf16.param_dtype = DType::kBF16;
  for (ZeroStage stage : {ZeroStage::kStage2, ZeroStage::kStage3}) {
    const bool params = stage == ZeroStage::kStage3;
    RunSetup plain(stage, 0, bf16);
    RunSetup offloaded = plain;
    offloaded.offload = nvme_offload(files.path(), params);
    const std::vector<float> reference = TrainedEngine(world, plain).train(0, kOffloadSteps);

    struct Case {
      const RunSetup& saves;
      const RunSetup& resumes;
    };
    for (const Case& c : {Case{offloaded, plain}, Case{plain, offloaded}, Case{offloaded, offloaded}}) {
      const std::string what = c.saves.describe(2) + " -> " + c.resumes.describe(2);
      SharedTempDir dir;
      {
        TrainedEngine first(world, c.saves);
        const std::vector<float> losses = first.train(0, kOffloadSaveAt);
        EXPECT_EQ(losses, std::vector<float>(reference.begin(), reference.begin() + kOffloadSaveAt)) << what;
        save_checkpoint(*first.engine, world, dir.path(), first.progress(kOffloadSaveAt), tiny_run_config());
      }
      TrainedEngine resumed(world, c.resumes, /*seed=*/77);
      load_checkpoint(*resumed.engine, world, dir.path() / step_dir_name(kOffloadSaveAt), tiny_run_config());
      const std::vector<float> losses = resumed.train(kOffloadSaveAt, kOffloadSteps);
      EXPECT_EQ(losses, std::vector<float>(reference.begin() + kOffloadSaveAt, reference.end())) << what;
    }
  }
}

}  // namespace
}  // namespace tessera::testing
