// Checkpoints of 8-bit AdamW state: the codes and per-block scales are saved quantized (i8, u8, f32
// datasets beside the f32 master), load back bit for bit at another rank count and ZeRO stage
// (blocks sit at the same flat positions), and training goes on exactly as the run that never
// stopped when the rank count is the same; an AdamW checkpoint is refused by an 8-bit run, naming
// both state lists.
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"

namespace tessera::testing {
namespace {

constexpr int kSaveAt = 2;
constexpr int kSteps = 4;

const MixedPrecision kF32{};

TEST(Checkpoint8bit, ReshardsBitForBitAndResumes) {
  SharedTempDir dir;
  const RunSetup saved_setup(ZeroStage::kStage2, 0, kF32, OptimizerKind::kAdamW8bit);
  std::vector<float> reference_losses(kSteps);
  std::vector<std::vector<std::vector<std::byte>>> saved_state(5);  // per state tensor, per unit
  auto comm2 = first_ranks(2);
  if (comm2) {
    TrainedEngine reference(*comm2, saved_setup);
    reference_losses = reference.train(0, kSteps);
    TrainedEngine first(*comm2, saved_setup);
    first.train(0, kSaveAt);
    for (std::size_t k = 0; k < saved_state.size(); ++k) saved_state[k] = gather_unit_bytes(*first.engine, k);
    save_checkpoint(*first.engine, *comm2, dir.path(), first.progress(kSaveAt), tiny_run_config());
  }
  MPI_Bcast(reference_losses.data(), kSteps, MPI_FLOAT, 0, MPI_COMM_WORLD);
  const auto ckpt = dir.path() / step_dir_name(kSaveAt);
  if (comm2 && comm2->rank() == 0) {
    const CheckpointMeta meta = read_meta_file((ckpt / kMetaFileName).string());
    ASSERT_EQ(meta.layout.states.size(), 5u);
    EXPECT_EQ(meta.layout.states[1].dtype, DType::kI8);
    EXPECT_EQ(meta.layout.states[2].elements_per_value, 256);
    EXPECT_EQ(meta.layout.state_alignment, 256);
  }

  struct Target {
    int ranks;
    ZeroStage stage;
  };
  for (const Target& t :
       {Target{1, ZeroStage::kStage0}, Target{2, ZeroStage::kStage3}, Target{world_size(), ZeroStage::kStage1}}) {
    const std::string what =
        "2 ranks ZeRO-2 -> " + std::to_string(t.ranks) + " ranks ZeRO-" + std::to_string(zero_stage_number(t.stage));
    auto comm = first_ranks(t.ranks);
    if (!comm) continue;
    TrainedEngine resumed(*comm, RunSetup(t.stage, 0, kF32, OptimizerKind::kAdamW8bit), /*seed=*/77);
    load_checkpoint(*resumed.engine, *comm, ckpt, tiny_run_config());
    for (std::size_t k = 0; k < saved_state.size(); ++k) {
      const auto loaded = gather_unit_bytes(*resumed.engine, k);
      if (comm->rank() == 0) {
        EXPECT_EQ(loaded, saved_state[k]) << what << ": state tensor " << k << " after loading";
      }
    }
    const std::vector<float> losses = resumed.train(kSaveAt, kSteps);
    for (int s = kSaveAt; s < kSteps; ++s) {
      const float expected = reference_losses[static_cast<std::size_t>(s)];
      if (t.ranks == 2) {
        EXPECT_EQ(losses[static_cast<std::size_t>(s - kSaveAt)], expected) << what << ": loss at step " << s;
      } else {
        EXPECT_NEAR(losses[static_cast<std::size_t>(s - kSaveAt)], expected, 1e-5 * std::abs(expected))
            << what << ": loss at step " << s << " (gradient sums in another order)";
      }
    }
  }
}

TEST(Checkpoint8bit, AdamWStateIsRefusedByAn8BitRun) {
  SharedTempDir dir;
  auto comm = first_ranks(2);
  if (comm) {
    TrainedEngine adamw(*comm, RunSetup(ZeroStage::kStage1));
    adamw.train(0, 1);
    save_checkpoint(*adamw.engine, *comm, dir.path(), adamw.progress(1), tiny_run_config());
    TrainedEngine eight(*comm, RunSetup(ZeroStage::kStage1, 0, kF32, OptimizerKind::kAdamW8bit));
    try {
      load_checkpoint(*eight.engine, *comm, dir.path() / step_dir_name(1), tiny_run_config());
      ADD_FAILURE() << "an AdamW checkpoint loaded into 8-bit AdamW";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch);
      EXPECT_NE(std::string(e.what()).find("exp_avg f32"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("exp_avg_q i8"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera::testing
