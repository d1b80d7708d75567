// train_gpt keeps the global batch of the checkpoint it resumes from, at any rank count: saved at 2
// ranks with global 24 = micro 2 x ranks 2 x accumulation 6, it resumes at 3 and 4 ranks with
// accumulation 4 and 3, says so in one line, continues the samples (the next checkpoint counts
// 24 per step on) and logs the losses of the run that never stopped — bit for bit at 2 ranks, to
// the printed precision (4 decimals) at 3 and 4, where the gradients are summed in another order. A
// micro-batch that cannot keep the global batch is refused before step 1 with the choices.
// tessera-test-timeout: 400
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/training/metrics_log.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"
#include "tests/support/unwrapped_lines.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::tiny_run;

class TrainGptResumeBatch : public testing::TrainGptTest {
 protected:
  TrainGptResumeBatch() : TrainGptTest("resume_batch", 20000, 64) {}
  // The command line of mpirun -np `ranks` train_gpt over the tiny model, 4 steps, with `flags`
  // (mpirun_expecting_failure's when the run is to be refused).
  std::string command(int ranks, const std::string& flags, bool refused = false) const {
    const std::string mpirun = refused ? testing::mpirun_expecting_failure(ranks)
                                       : "mpirun --oversubscribe -np " + std::to_string(ranks) + " ";
    return mpirun + train_gpt_ + tiny_run(data_) + " --progress plain --steps 4 " + flags;
  }
  testing::ProcessResult run(int ranks, const std::string& flags) const {
    return run_bounded(command(ranks, flags), 180);
  }
};

TEST_F(TrainGptResumeBatch, KeepsTheGlobalBatchAtAnotherRankCount) {
  const std::string saved = (dir_ / "saved").string();
  const std::string metrics = (dir_ / "saved.jsonl").string();
  const auto first =
      run(2, "--micro-batch 2 --grad-accum 6 --checkpoint-dir " + saved + " --save-every 2 --metrics " + metrics);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const MetricsSeries never_stopped = read_metrics_file(metrics);
  ASSERT_EQ(never_stopped.train_loss.size(), 4u) << first.output;

  const struct {
    int ranks;
    std::int64_t accumulation;
  } cases[] = {{2, 6}, {3, 4}, {4, 3}};
  // The resumed runs (each into its own directory and metrics file), the refused one and the one that
  // changes the global batch only read the checkpoint: they run at once.
  std::vector<std::string> commands;
  for (const auto& c : cases) {
    const std::string n = std::to_string(c.ranks);
    const std::string out_dir = (dir_ / ("at" + n)).string(), out_metrics = (dir_ / ("at" + n + ".jsonl")).string();
    std::filesystem::copy_file(metrics, out_metrics);  // the metrics file goes on with the run
    // No batch flags: the checkpoint's micro-batch 2 is kept and the accumulation derived.
    commands.push_back(command(
        c.ranks, "--resume " + saved + "/step_0000002 --checkpoint-dir " + out_dir + " --metrics " + out_metrics));
  }
  // A micro-batch that cannot keep 24 at 3 ranks (8 per rank): refused before step 1, with the choices.
  commands.push_back(command(3, "--micro-batch 3 --resume " + saved + "/step_0000002", true));
  // --global-batch changes it, and says so.
  commands.push_back(command(3, "--global-batch 12 --resume " + saved + "/step_0000002"));
  const std::vector<testing::ProcessResult> results = testing::run_concurrently(commands, 180);

  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const auto& c = cases[i];
    const std::string n = std::to_string(c.ranks);
    const std::string out_dir = (dir_ / ("at" + n)).string(), out_metrics = (dir_ / ("at" + n + ".jsonl")).string();
    const testing::ProcessResult& resumed = results[i];
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const std::string line =
        c.ranks == 2 ? "resume: global batch 24 kept at 2 ranks: as saved (micro 2 x ranks 2 x accumulation 6)"
                     : "resume: global batch 24 kept at " + n + " ranks: ranks 2 -> " + n + ", accumulation 6 -> " +
                           std::to_string(c.accumulation) + " (micro 2 x ranks " + n + " x accumulation " +
                           std::to_string(c.accumulation) + ")";
    EXPECT_NE(tessera::testing::unwrapped_lines(resumed.output).find(line + "\n"), std::string::npos) << line << "\n"
                                                                                                      << resumed.output;

    // The samples continue: 2 steps of 24 after the checkpoint's 48, and the plan recorded.
    const CheckpointMeta meta = read_meta_file(out_dir + "/step_0000004/meta.h5");
    EXPECT_EQ(meta.progress.samples_seen, 4 * 24) << n << " ranks";
    EXPECT_EQ(meta.config.run().at("global_batch"), "24");
    EXPECT_EQ(meta.config.run().at("grad_accum"), std::to_string(c.accumulation));
    EXPECT_EQ(meta.config.run().at("data_parallel_ranks"), n);

    const MetricsSeries after = read_metrics_file(out_metrics);
    ASSERT_EQ(after.train_loss.size(), 4u) << resumed.output;  // steps 1-2 kept from the checkpoint's run
    for (std::size_t s = 2; s < 4; ++s) {
      if (c.ranks == 2) {
        EXPECT_EQ(after.train_loss[s], never_stopped.train_loss[s]) << "step " << s + 1 << ", same rank count";
      } else {
        EXPECT_NEAR(after.train_loss[s], never_stopped.train_loss[s], 5e-5)
            << "step " << s + 1 << ", " << n << " ranks";
      }
    }
  }

  const testing::ProcessResult& refused = results[std::size(cases)];
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("keep 24 with --micro-batch 2 (accumulation 4) or --micro-batch 4 (accumulation 2), "
                                "or change it with --global-batch 21 or 27 (or 18 or 27 with --micro-batch 3)"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("step 1/4"), std::string::npos) << refused.output;

  const testing::ProcessResult& changed = results[std::size(cases) + 1];
  ASSERT_EQ(changed.exit_code, 0) << changed.output;
  EXPECT_NE(changed.output.find("resume: global batch changed from 24 (micro 2 x ranks 2 x accumulation 6) to 12 "
                                "(micro 4 x ranks 3 x accumulation 1) by --global-batch 12"),
            std::string::npos)
      << changed.output;
}

}  // namespace
}  // namespace tessera
