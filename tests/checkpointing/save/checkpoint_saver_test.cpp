// What a save reports and records: SaveResult's step, the bytes of every file of the checkpoint
// (equal to what is on disk, the same on every rank) and its time; the program's effective
// configuration stored in meta.h5, read back, and shown by describe_checkpoint (tessera_ckpt
// info); the TrainingCheckpointer hands each committed save to the program once, sync or async.
// tessera-test-ranks: 1 2
#include "tessera/checkpointing/save/checkpoint_saver.hpp"

#include <gtest/gtest.h>

#include "tessera/checkpointing/format/checkpoint_info.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr const char* kEffective =
    "# train_gpt effective configuration (--config reads this back)\n"
    "layers = 2       # run.ini:3\n"
    "lr = 0.003       # command line\n";

std::int64_t bytes_on_disk(const std::filesystem::path& dir) {
  std::int64_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    bytes += static_cast<std::int64_t>(entry.file_size());
  return bytes;
}

TEST(CheckpointSaver, ReportsItsBytesAndRecordsTheEffectiveConfiguration) {
  SharedTempDir dir;
  MpiCommunicator world(MPI_COMM_WORLD);
  TrainedEngine run(world, RunSetup(ZeroStage::kStage2));
  run.train(0, 2);
  RunConfig config = tiny_run_config();
  config.set_effective_config(kEffective);
  const SaveResult saved = save_checkpoint(*run.engine, world, dir.path(), run.progress(2), config);
  EXPECT_EQ(saved.step, 2);
  EXPECT_EQ(saved.path, dir.path() / step_dir_name(2));
  EXPECT_GE(saved.seconds, 0.0);
  EXPECT_EQ(saved.checkpoint_bytes, bytes_on_disk(saved.path)) << "rank " << world.rank();
  if (world.rank() == 0) {
    EXPECT_GT(saved.bytes_written, static_cast<std::int64_t>(std::filesystem::file_size(saved.path / kMetaFileName)));
  }
  const CheckpointMeta meta = read_meta_file((saved.path / kMetaFileName).string());
  EXPECT_EQ(meta.config.effective_config(), kEffective);
  const std::string info = describe_checkpoint(dir.path());
  EXPECT_NE(info.find("configuration  the options of the run that saved it:\n"
                      "  # train_gpt effective configuration (--config reads this back)\n"
                      "  layers = 2       # run.ini:3\n"
                      "  lr = 0.003       # command line\n"),
            std::string::npos)
      << info;
}

TEST(CheckpointSaver, WithoutAnEffectiveConfigurationInfoShowsNone) {
  SharedTempDir dir;
  MpiCommunicator world(MPI_COMM_WORLD);
  TrainedEngine run(world, RunSetup());
  run.train(0, 1);
  save_checkpoint(*run.engine, world, dir.path(), run.progress(1), tiny_run_config());
  const CheckpointMeta meta = read_meta_file((dir.path() / step_dir_name(1) / kMetaFileName).string());
  EXPECT_EQ(meta.config.effective_config(), "");
  EXPECT_EQ(describe_checkpoint(dir.path()).find("configuration"), std::string::npos);
}

TEST(CheckpointSaver, TrainingCheckpointerHandsOverEachCommittedSaveOnce) {
  for (const SaveMode mode : {SaveMode::kSync, SaveMode::kAsync}) {
    SharedTempDir dir;
    MpiCommunicator world(MPI_COMM_WORLD);
    TrainedEngine run(world, RunSetup(ZeroStage::kStage1));
    CheckpointOptions options;
    options.dir = dir.path().string();
    options.save_every = 2;
    options.mode = mode;
    options.handle_signals = false;
    TrainingCheckpointer checkpointer(options, *run.engine, world, tiny_run_config());
    std::vector<std::int64_t> steps;
    for (int s = 1; s <= 4; ++s) {
      run.train(s - 1, s);
      checkpointer.after_step(run.progress(s));
      for (const SaveResult& r : checkpointer.take_committed_saves()) steps.push_back(r.step);
    }
    checkpointer.finish();
    for (const SaveResult& r : checkpointer.take_committed_saves()) {
      steps.push_back(r.step);
      EXPECT_EQ(r.checkpoint_bytes, bytes_on_disk(r.path));
    }
    EXPECT_EQ(steps, (std::vector<std::int64_t>{2, 4})) << (mode == SaveMode::kSync ? "sync" : "async");
    EXPECT_TRUE(checkpointer.take_committed_saves().empty());
  }
}

}  // namespace
}  // namespace tessera::testing
