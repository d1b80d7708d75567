// A run directory's checkpoints are never lost by accident, through train_gpt:
//  * a fresh run (no --resume) in a --checkpoint-dir that holds checkpoints refuses to start,
//    naming them and saying --resume auto or --overwrite; the checkpoints are untouched, --resume
//    auto continues them, --overwrite starts over without them;
//  * a run that diverges (resumed at --lr 1e36: non-finite; at 1e6: a finite loss far out of the
//    spike guard's band) still has its last healthy checkpoint on disk, marked healthy, beside the
//    newest (marked unhealthy); the checkpoint saved right before the first bad loss is marked
//    unhealthy after the fact;
//  * a run with a checkpoint directory saves its last step;
//  * a checkpoint left half-deleted by a crash during retention (.deleted_step_*) is removed at the
//    next start, and never counts as a checkpoint.
// Runs that share no directory (the two divergences of a test, the two --save-every settings) run at
// once; each is checked as before.
// tessera-test-cost: 9
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kRunDirLimit = 120;  // seconds per child process

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
  const ChildResult first = run_child_job(tiny_train_gpt(data, 4) + save, kRunDirLimit);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 4}));

  const ChildResult again = run_child_job(tiny_train_gpt(data, 4) + save, kRunDirLimit);
  EXPECT_EQ(again.exit_code, 1) << again.output;
  for (const std::string& part : {"--checkpoint-dir " + run.string() + ": holds 2 checkpoint(s) of an earlier run",
                                  std::string("(step_0000002 to step_0000004)"), std::string("--resume auto"),
                                  std::string("--overwrite"), std::string("choose another directory")}) {
    EXPECT_TRUE(contains(again.output, part)) << "no \"" << part << "\" in:\n" << again.output;
  }
  EXPECT_TRUE(logged_steps(again.output).empty()) << "trained anyway:\n" << again.output;
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(4));

  const ChildResult resumed = run_child_job(tiny_train_gpt(data, 6) + save + " --resume auto", kRunDirLimit);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 4")) << resumed.output;
  EXPECT_EQ(logged_steps(resumed.output), (std::vector<int>{5, 6})) << resumed.output;

  const ChildResult over = run_child_job(
      tiny_train_gpt(data, 2) + " --checkpoint-dir " + run.string() + " --save-every 1 --overwrite", kRunDirLimit);
  ASSERT_EQ(over.exit_code, 0) << over.output;
  EXPECT_EQ(logged_steps(over.output), (std::vector<int>{1, 2})) << over.output;
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{1, 2})) << "the earlier run's checkpoints are still there";
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(2));
}

// The loss logged for step N ("step     N/8  loss X").
double logged_loss(const std::string& output, int step) {
  const std::regex line("step +" + std::to_string(step) + "/[0-9]+  loss +([^ ]+)");
  std::smatch m;
  return std::regex_search(output, m, line) ? std::stod(m[1]) : -1.0;
}

std::string info_of(const fs::path& checkpoint) {
  return run_child_job(tessera_ckpt_bin() + " info " + checkpoint.string(), kRunDirLimit).output;
}

// Three healthy steps saved, then the run continues with a learning rate that wrecks the weights
// at step 4. Step 5's loss shows it: not finite at 1e36, finite but far above the band at 1e6.
// Step 4's checkpoint gets the unhealthy mark, the later ones are saved unhealthy, and retention
// keeps step 3, the last healthy state, whatever --keep-last says.
void diverge_after_three_healthy_steps(const std::string& lr, const std::string& keep_last,
                                       const std::vector<std::int64_t>& kept, const std::string& step5_reason) {
  ScratchDir scratch("ckpt_diverge");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 1 --keep-last " + keep_last;
  const ChildResult healthy = run_child_job(tiny_train_gpt(data, 3) + save, kRunDirLimit);
  ASSERT_EQ(healthy.exit_code, 0) << healthy.output;
  const ChildResult r =
      run_child_job(tiny_train_gpt(data, 8) + save + " --resume auto --lr " + lr + " --warmup 0", kRunDirLimit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double step4 = logged_loss(r.output, 4), step5 = logged_loss(r.output, 5);
  EXPECT_GT(step4, 0.0) << r.output;
  EXPECT_LT(step4, 10.0) << "step 4's loss measures step 3's weights, which were healthy:\n" << r.output;
  EXPECT_TRUE(!(step5 < 100.0)) << "the learning rate did not wreck the weights:\n" << r.output;
  EXPECT_EQ(committed_steps(run), kept) << r.output;
  EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(8)) << "latest stays the newest whole checkpoint";
  EXPECT_TRUE(contains(info_of(run / step_dir_name(3)), "healthy        yes")) << info_of(run / step_dir_name(3));
  EXPECT_TRUE(contains(info_of(run / step_dir_name(8)), "healthy        no")) << info_of(run / step_dir_name(8));
  if (fs::exists(run / step_dir_name(4))) {
    const std::string info4 = info_of(run / step_dir_name(4));
    EXPECT_TRUE(contains(info4, "healthy        no (the loss of step 5, right after it: " + step5_reason)) << info4;
  }
  const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + (run / step_dir_name(3)).string(), kRunDirLimit);
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

TEST(CheckpointRunDir, RetentionKeepsTheLastHealthyCheckpointOfARunGoingNonFinite) {
  all_at_once(std::vector<std::function<void()>>{
      [] {
        diverge_after_three_healthy_steps("1e36", "2", {3, 7, 8}, "the loss is not finite");
      },
      [] {
        diverge_after_three_healthy_steps("1e36", "0", {1, 2, 3, 4, 5, 6, 7, 8}, "the loss is not finite");
      },
  });
}

TEST(CheckpointRunDir, RetentionKeepsTheLastHealthyCheckpointOfARunWhoseLossExplodes) {
  all_at_once(std::vector<std::function<void()>>{
      [] {
        diverge_after_three_healthy_steps("1e6", "1", {3, 8}, "the loss ");
      },
      [] {
        diverge_after_three_healthy_steps("1e6", "0", {1, 2, 3, 4, 5, 6, 7, 8}, "the loss ");
      },
  });
}

// A run with a checkpoint directory ends saved, whatever --save-every says; the tools name the
// step they read.
TEST(CheckpointRunDir, TheLastStepIsSaved) {
  ScratchDir scratch("ckpt_final");
  const std::string data = write_tokens(scratch.path());
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> cases = {{" --save-every 2", {2, 4, 5}},
                                                                                {"", {5}}};
  std::vector<std::function<void()>> checks;
  for (const auto& [save_every, expected] : cases) {
    checks.push_back([&scratch, &data, &save_every = save_every, &expected = expected] {
      const fs::path run = scratch / ("run" + std::to_string(expected.size()));
      const ChildResult r =
          run_child_job(tiny_train_gpt(data, 5) + " --checkpoint-dir " + run.string() + save_every, kRunDirLimit);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_EQ(committed_steps(run), expected) << r.output;
      EXPECT_EQ(fs::read_symlink(run / kLatestName), step_dir_name(5));
      const std::string info = info_of(run);
      EXPECT_TRUE(contains(info, "step           5 ")) << info;
    });
  }
  all_at_once(checks);
}

TEST(CheckpointRunDir, HalfDeletedCheckpointsAreRemovedAtTheNextStart) {
  ScratchDir scratch("ckpt_trash");
  const std::string data = write_tokens(scratch.path());
  const fs::path run = scratch / "run";
  const std::string save = " --checkpoint-dir " + run.string() + " --save-every 1 --keep-last 2";
  ASSERT_EQ(run_child_job(tiny_train_gpt(data, 3) + save, kRunDirLimit).exit_code, 0);
  // What a crash part-way through deleting step 1 leaves: the renamed directory, half emptied.
  const fs::path trash = run / (std::string(kDeletedPrefix) + step_dir_name(1));
  fs::create_directories(trash);
  std::ofstream(trash / "shard_00000.h5") << "half";
  ASSERT_EQ(committed_steps(run), (std::vector<std::int64_t>{2, 3})) << "a .deleted_ directory counted as a checkpoint";
  const ChildResult resumed = run_child_job(tiny_train_gpt(data, 4) + save + " --resume auto", kRunDirLimit);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "at step 3")) << resumed.output;
  EXPECT_FALSE(fs::exists(trash)) << "the half-deleted checkpoint was left";
  EXPECT_EQ(committed_steps(run), (std::vector<std::int64_t>{3, 4}));
}

}  // namespace
}  // namespace tessera::testing
