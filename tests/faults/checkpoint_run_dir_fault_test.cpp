// A run directory's checkpoints are never lost by accident, through train_gpt:
//  * a fresh run (no --resume) in a --checkpoint-dir that holds checkpoints refuses to start,
//    naming them and saying --resume auto or --overwrite; the checkpoints are untouched, --resume
//    auto continues them, --overwrite starts over without them;
//  * a run that diverges (--lr 1e36: every step after the first is skipped as non-finite) with
//    --save-every 1 --keep-last 2 still has its last healthy checkpoint on disk, marked healthy,
//    beside the 2 newest (marked unhealthy);
//  * a checkpoint left half-deleted by a crash during retention (.deleted_step_*) is removed at the
//    next start, and never counts as a checkpoint.
#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kLimit = 120;  // seconds per child process

std::vector<std::int64_t> committed_steps(const fs::path& dir) {
  std::vector<std::int64_t> steps;
  for (const CommittedCheckpoint& c : list_checkpoints(dir)) steps.push_back(c.step);
  return steps;
}

TEST(CheckpointRunDir, FreshRunRefusesADirectoryWithCheckpoints) {
  ScratchDir scratch("ckpt_run_dir");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 2";
  const ChildResult first = run_child_job(tiny_train_gpt(data, 4) + save, kLimit);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 4}));

  const ChildResult again = run_child_job(tiny_train_gpt(data, 4) + save, kLimit);
  EXPECT_EQ(again.exit_code, 1) << again.output;
  for (const std::string& part : {"--checkpoint-dir " + run.string() + ": holds 2 checkpoint(s) of an earlier run",
                                  std::string("(step_0000002 to step_0000004)"), std::string("--resume auto"),
                                  std::string("--overwrite"), std::string("choose another directory")}) {
    EXPECT_TRUE(contains(again.output, part)) << "no \"" << part << "\" in:\n" << again.output;
  }
  EXPECT_TRUE(logged_steps(again.output).empty()) << "trained anyway:\n" << again.output;
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(4));

  const ChildResult resumed = run_child_job(tiny_train_gpt(data, 6) + save + " --resume auto", kLimit);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 4")) << resumed.output;
  EXPECT_EQ(logged_steps(resumed.output), (std::vector<int>{5, 6})) << resumed.output;

  const ChildResult over = run_child_job(
      tiny_train_gpt(data, 2) + " --checkpoint-dir " + run.string() + " --save-every 1 --overwrite", kLimit);
  ASSERT_EQ(over.exit_code, 0) << over.output;
  EXPECT_EQ(logged_steps(over.output), (std::vector<int>{1, 2})) << over.output;
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{1, 2})) << "the earlier run's checkpoints are still there";
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(2));
}

TEST(CheckpointRunDir, RetentionKeepsTheLastHealthyCheckpointOfADivergingRun) {
  ScratchDir scratch("ckpt_diverge");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const ChildResult r = run_child_job(tiny_train_gpt(data, 6) + " --lr 1e36 --warmup 0 --checkpoint-dir " +
                                          run.string() + " --save-every 1 --keep-last 2",
                                      kLimit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "(skipped)")) << "the run did not diverge:\n" << r.output;
  // Step 1 was taken (healthy); steps 2..6 were skipped as non-finite.
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{1, 5, 6}));
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(6)) << "latest stays the newest whole checkpoint";
  const ChildResult healthy = run_child_job(tessera_ckpt_bin() + " info " + (run / step_dir_name(1)).string(), kLimit);
  EXPECT_TRUE(contains(healthy.output, "healthy        yes")) << healthy.output;
  const ChildResult diverged = run_child_job(tessera_ckpt_bin() + " info " + (run / step_dir_name(6)).string(), kLimit);
  EXPECT_TRUE(contains(diverged.output, "healthy        no")) << diverged.output;
  const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + (run / step_dir_name(1)).string(), kLimit);
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

TEST(CheckpointRunDir, HalfDeletedCheckpointsAreRemovedAtTheNextStart) {
  ScratchDir scratch("ckpt_trash");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 1 --keep-last 2";
  ASSERT_EQ(run_child_job(tiny_train_gpt(data, 3) + save, kLimit).exit_code, 0);
  // What a crash part-way through deleting step 1 leaves: the renamed directory, half emptied.
  const fs::path trash = run / (std::string(kDeletedPrefix) + step_dir_name(1));
  fs::create_directories(trash);
  std::ofstream(trash / "shard_00000.h5") << "half";
  ASSERT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 3})) << "a .deleted_ directory counted as a checkpoint";
  const ChildResult resumed = run_child_job(tiny_train_gpt(data, 4) + save + " --resume auto", kLimit);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 3")) << resumed.output;
  EXPECT_FALSE(fs::exists(trash)) << "the half-deleted checkpoint was left";
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{3, 4}));
}

}  // namespace
}  // namespace tessera::testing
