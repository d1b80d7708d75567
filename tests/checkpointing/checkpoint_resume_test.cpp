// Save at step k and resume at the same rank count and stage: the continuation equals the run that
// never stopped bit for bit (losses, parameters, Adam moments) for ZeRO stages 0-3, bf16
// parameters, the fp16 loss scaler's state, and hybrid groups; the progress, config and every
// rank's RNG words come back as stored.
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"

namespace tessera::testing {
namespace {

constexpr int kResumeSaveAt = 3;
constexpr int kResumeSteps = 6;

void expect_bit_identical_resume(const RunSetup& setup, const std::filesystem::path& dir) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::string what = setup.describe(world.size());

  // The run that never stops.
  TrainedEngine reference(world, setup);
  const std::vector<float> reference_losses = reference.train(0, kResumeSteps);
  const auto reference_params = gather_state(*reference.engine, 0);
  const auto reference_m = gather_state(*reference.engine, 1);
  const auto reference_v = gather_state(*reference.engine, 2);
  const auto reference_scaler =
      reference.engine->loss_scaler() ? reference.engine->loss_scaler()->state() : DynamicLossScaler::State{};

  // Train to kResumeSaveAt, save, throw the engine away.
  {
    TrainedEngine first(world, setup);
    first.train(0, kResumeSaveAt);
    const SaveResult saved = save_checkpoint(*first.engine, world, dir, first.progress(kResumeSaveAt), tiny_run_config());
    EXPECT_EQ(saved.path, dir / step_dir_name(kResumeSaveAt));
  }
  // A new engine from another seed: everything it continues with must come from the checkpoint.
  TrainedEngine resumed(world, setup, /*seed=*/999);
  const auto target = resolve_checkpoint(dir);
  ASSERT_TRUE(target.has_value()) << what << ": no checkpoint under " << dir;
  const LoadResult loaded = load_checkpoint(*resumed.engine, world, *target, tiny_run_config());
  EXPECT_EQ(loaded.progress.step, kResumeSaveAt) << what;
  EXPECT_EQ(loaded.progress.samples_seen, kResumeSaveAt * kCkptGlobal) << what;
  EXPECT_EQ(loaded.progress.data_seed, kSeed) << what;
  const std::vector<std::uint64_t> rng{0x1000u + static_cast<std::uint64_t>(world.rank()), kResumeSaveAt};
  EXPECT_EQ(loaded.progress.rng_state, rng) << what << ", rank " << world.rank();
  EXPECT_EQ(loaded.meta.world_size, world.size());
  EXPECT_EQ(loaded.meta.stage, setup.stage);
  EXPECT_EQ(loaded.meta.config.model().at("layers"), "2");
  EXPECT_EQ(resumed.engine->optimizer_steps(), reference.engine->optimizer_steps() - (kResumeSteps - kResumeSaveAt)) << what;

  const std::vector<float> losses = resumed.train(kResumeSaveAt, kResumeSteps);
  for (int s = kResumeSaveAt; s < kResumeSteps; ++s) {
    EXPECT_EQ(losses[s - kResumeSaveAt], reference_losses[s]) << what << ": loss at step " << s << ", rank " << world.rank();
  }
  EXPECT_EQ(compare_states(gather_state(*resumed.engine, 0), reference_params), "") << what << ": parameters";
  EXPECT_EQ(compare_states(gather_state(*resumed.engine, 1), reference_m), "") << what << ": Adam m";
  EXPECT_EQ(compare_states(gather_state(*resumed.engine, 2), reference_v), "") << what << ": Adam v";
  if (const DynamicLossScaler* scaler = resumed.engine->loss_scaler()) {
    EXPECT_EQ(scaler->state().scale, reference_scaler.scale) << what;
    EXPECT_EQ(scaler->state().good_steps, reference_scaler.good_steps) << what;
    EXPECT_EQ(scaler->state().hysteresis_left, reference_scaler.hysteresis_left) << what;
  }
}

TEST(CheckpointResume, EveryStageContinuesBitIdentically) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    SharedTempDir dir;
    expect_bit_identical_resume(RunSetup(stage), dir.path());
  }
}

TEST(CheckpointResume, Bf16ParametersContinueBitIdentically) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    RunSetup setup(stage);
    setup.precision.param_dtype = DType::kBF16;
    setup.precision.reduce_dtype = DType::kBF16;
    SharedTempDir dir;
    expect_bit_identical_resume(setup, dir.path());
  }
}

TEST(CheckpointResume, LossScalerStateComesBack) {
  RunSetup setup(ZeroStage::kStage2);
  setup.precision.reduce_dtype = DType::kF16;  // dynamic loss scaling on
  SharedTempDir dir;
  expect_bit_identical_resume(setup, dir.path());
}

TEST(CheckpointResume, HybridGroupsContinueBitIdentically) {
  if (world_size() != 4) GTEST_SKIP() << "hybrid 2 x 2 needs 4 ranks";
  SharedTempDir dir;
  expect_bit_identical_resume(RunSetup(ZeroStage::kStage3, 2), dir.path());
  // Only the first replica group wrote shards: 2 shard files.
  if (world_rank() == 0) {
    EXPECT_TRUE(std::filesystem::exists(dir.path() / step_dir_name(kResumeSaveAt) / shard_file_name(1)));
    EXPECT_FALSE(std::filesystem::exists(dir.path() / step_dir_name(kResumeSaveAt) / shard_file_name(2)));
  }
}

}  // namespace
}  // namespace tessera::testing
