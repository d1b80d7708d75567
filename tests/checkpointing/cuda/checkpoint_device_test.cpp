// Checkpoints of an engine on the GPU: two ranks sharing the GPU (the staged MPI communicator) train
// the tiny GPT at ZeRO-3, save, and the run goes on from the checkpoint at one rank (ZeRO-1) on the
// GPU and at two ranks on the CPU; 1 -> 2 ranks the other way. The steps after the load match the
// run that never stopped (the GPU's f32 GEMMs, so within 1e-5 relative: only the order of gradient
// sums differs). The snapshot is taken into the device's pinned memory (counted as comm buffers of
// its pinned-host tracker), not into pageable buffers. Compiled only with CUDA; skips without a GPU.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/checkpointing/save/shard_snapshot.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"
#include "tests/runtime/cuda/gpu_rank_test.hpp"

namespace tessera::testing {
namespace {

constexpr int kSaveAt = 2;
constexpr int kSteps = 4;

class DeviceCheckpoint : public GpuRankTest {
 protected:
  // Saves at `from_ranks` on the GPU after kSaveAt steps, resumes at `to_ranks` on `to_gpu` or the
  // CPU, and compares the next steps with the run that never stopped.
  void save_and_resume(int from_ranks, RunSetup from, int to_ranks, RunSetup to, bool to_gpu) {
    const std::string what = from.describe(from_ranks) + " on the GPU -> " + to.describe(to_ranks) +
                             (to_gpu ? " on the GPU" : " on the CPU");
    SharedTempDir dir;
    std::vector<float> reference(kSteps);
    if (auto comm = first_ranks(from_ranks)) {
      TrainedEngine straight(*comm, from, kSeed, tiny_gpt(), rank_gpu());
      reference = straight.train(0, kSteps);
      TrainedEngine first(*comm, from, kSeed, tiny_gpt(), rank_gpu());
      first.train(0, kSaveAt);
      MemoryTracker& pinned = first.device->memory(MemoryKind::kPinnedHost);
      pinned.reset_peaks();
      save_checkpoint(*first.engine, *comm, dir.path(), first.progress(kSaveAt), tiny_run_config());
      EXPECT_GE(pinned.peak(MemoryCategory::kCommBuffers), ShardSnapshot::bytes_needed(*first.engine))
          << what << ": the snapshot did not go through the device's pinned memory";
    }
    MPI_Bcast(reference.data(), kSteps, MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (auto comm = first_ranks(to_ranks)) {
      TrainedEngine resumed(*comm, to, /*seed=*/999, tiny_gpt(), to_gpu ? rank_gpu() : nullptr);
      const LoadResult loaded =
          load_checkpoint(*resumed.engine, *comm, dir.path() / step_dir_name(kSaveAt), tiny_run_config());
      EXPECT_EQ(loaded.progress.step, kSaveAt) << what;
      const std::vector<float> losses = resumed.train(kSaveAt, kSteps);
      for (int s = kSaveAt; s < kSteps; ++s) {
        const float expected = reference[static_cast<std::size_t>(s)];
        EXPECT_NEAR(losses[s - kSaveAt], expected, 1e-5 * std::abs(expected))
            << what << ": loss at step " << s << ", rank " << comm->rank();
      }
    }
  }
};

TEST_F(DeviceCheckpoint, TwoRanksZero3ToOneRankZero1OnTheGpu) {
  save_and_resume(2, RunSetup(ZeroStage::kStage3), 1, RunSetup(ZeroStage::kStage1), true);
}

TEST_F(DeviceCheckpoint, TwoRanksOnTheGpuToTwoRanksOnTheCpu) {
  save_and_resume(2, RunSetup(ZeroStage::kStage2), 2, RunSetup(ZeroStage::kStage3), false);
}

TEST_F(DeviceCheckpoint, OneRankToTwoRanksOnTheGpu) {
  save_and_resume(1, RunSetup(ZeroStage::kStage1, 0, {}, OptimizerKind::kAdamW8bit), 2,
                  RunSetup(ZeroStage::kStage3, 0, {}, OptimizerKind::kAdamW8bit), true);
}

}  // namespace
}  // namespace tessera::testing
