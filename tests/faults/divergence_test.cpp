// Divergence and the loss-spike guard, end to end through train_gpt:
// - a run whose updates stay non-finite (--lr 1e36) reports its skipped steps between log lines and
//   stops after --max-skipped-steps in a row with exit 4 and a message saying what to change;
// - with --spike-guard, a planted spike (a global batch of one token id the model never saw) is
//   skipped, on 2 ranks exactly as on 1 process (same losses at every step), and the run goes on;
// - spikes --max-skipped-steps in a row with no checkpoint stop the run with the message; with a
//   checkpoint in --checkpoint-dir the run reloads it, moves the data past the bad batches and
//   finishes.
// The two runs of each test share nothing and run at once; each is checked as before.
// tessera-test-timeout: 400
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tessera/text/data/sample_loader.hpp"
#include "tessera/training/batch_plan.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded_all;
using testing::ScratchDir;
using testing::tiny_run;
using testing::train_gpt_binary;

constexpr std::int64_t kSeqLen = 16, kGlobal = 4;
constexpr std::uint64_t kSeed = 1337;  // train_gpt's default --seed

// Token data of ids 0..39 where the global batches of the 0-based `spike_steps` are all id 63:
// those steps' loss is far above anything the model saw. Uses the loader's own order.
std::string write_spiked_data(const ScratchDir& dir, const std::vector<std::int64_t>& spike_steps) {
  const std::string path = (dir / "tokens.bin").string();
  std::vector<std::int32_t> tokens = random_tokens(40000, 40);
  write_token_file(path, tokens);
  const SampleLoader loader(TokenDataset(path), kSeqLen, kSeed);
  for (std::int64_t step : spike_steps) {
    for (std::int64_t g = step * kGlobal; g < (step + 1) * kGlobal; ++g) {
      const std::int64_t w = loader.window_of(g);
      for (std::int64_t i = w * kSeqLen; i <= (w + 1) * kSeqLen; ++i) tokens[static_cast<std::size_t>(i)] = 63;
    }
  }
  write_token_file(path, tokens);
  return path;
}

std::vector<std::string> logged_losses(const std::string& log) {
  std::vector<std::string> out;
  const std::regex line(R"(step +[0-9]+/[0-9]+  loss ([-a-z0-9.]+)(?: \(skipped\))?  )");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

class Divergence : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }
  std::string train_gpt_;
};

TEST_F(Divergence, NonFiniteStepsStopTheRunWithAMessage) {
  ScratchDir dir("divergence");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(20000, 40));
  const auto runs = run_bounded_all({
      train_gpt_ + tiny_run(data) + " --steps 50 --lr 1e36 --max-skipped-steps 6",
      // --max-skipped-steps 0 keeps the old behaviour: every step skipped, and the run ends normally.
      train_gpt_ + tiny_run(data) + " --steps 12 --lr 1e36 --max-skipped-steps 0",
  });
  const auto& r = runs[0];
  EXPECT_EQ(r.exit_code, 4) << r.output;
  for (const char* part : {"skipped: the gradients are not finite", "(1 in a row, 1 in this run)",
                           "(4 in a row, 4 in this run)", "stopping at step 7: the last 6 steps were all skipped",
                           "--max-skipped-steps 6", "Try a lower --lr (now 1e+36)", "--grad-clip"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step     8/50"), std::string::npos) << "it went on:\n" << r.output;

  const auto& never = runs[1];
  EXPECT_EQ(never.exit_code, 0) << never.output;
  EXPECT_NE(never.output.find("(8 in a row, 8 in this run)"), std::string::npos) << never.output;
}

TEST_F(Divergence, APlantedSpikeIsSkippedOnEveryRankAndTheRunGoesOn) {
  ScratchDir dir("spike");
  const std::string data = write_spiked_data(dir, {30});
  const std::string args = tiny_run(data) + " --steps 36 --global-batch 4 --spike-guard --spike-window 20";
  const auto runs =
      run_bounded_all({train_gpt_ + args + " --micro-batch 4",
                       "mpirun --oversubscribe -np 2 " + train_gpt_ + args + " --micro-batch 2 --zero 1"});
  const auto &one = runs[0], &two = runs[1];
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  for (const auto* r : {&one, &two}) {
    EXPECT_NE(r->output.find("step    31 skipped: spike: loss"), std::string::npos) << r->output;
    EXPECT_NE(r->output.find("(1 in a row, 1 in this run)"), std::string::npos) << r->output;
    EXPECT_EQ(r->output.find("(2 in a row"), std::string::npos) << r->output;
    EXPECT_NE(r->output.find("step    36/36"), std::string::npos) << r->output;
  }
  // Had any rank stepped on the spike, its weights (ZeRO-1: its optimizer shard) would differ and
  // the losses after step 31 would too.
  const auto a = logged_losses(one.output), b = logged_losses(two.output);
  ASSERT_EQ(a.size(), 36u) << one.output;
  EXPECT_EQ(a, b) << "one process:\n" << one.output << "\ntwo ranks:\n" << two.output;
}

TEST_F(Divergence, SpikesInARowStopWithoutACheckpointAndReloadWithOne) {
  ScratchDir dir("spike_reload");
  const std::string data = write_spiked_data(dir, {30, 31, 32});
  const std::string args = tiny_run(data) +
                           " --steps 40 --global-batch 4 --micro-batch 4 --spike-guard "
                           "--spike-window 20 --max-skipped-steps 3";
  const std::string run_dir = (dir / "run").string();
  const auto runs =
      run_bounded_all({train_gpt_ + args, train_gpt_ + args + " --checkpoint-dir " + run_dir + " --save-every 10"});
  const auto &alone = runs[0], &reloaded = runs[1];
  EXPECT_EQ(alone.exit_code, 4) << alone.output;
  for (const char* part : {"stopping at step 33: the last 3 steps were all skipped", "no --checkpoint-dir"}) {
    EXPECT_NE(alone.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << alone.output;
  }

  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.output;
  EXPECT_NE(reloaded.output.find("step    33: 3 steps in a row skipped; reloaded the checkpoint of step 30 and "
                                 "moved the data past the skipped batches (to sample 132)"),
            std::string::npos)
      << reloaded.output;
  // After the reload, steps 31..40 read samples 132.. : the planted batches are not seen again.
  const std::string after = reloaded.output.substr(reloaded.output.find("reloaded the checkpoint"));
  EXPECT_EQ(after.find("skipped:"), std::string::npos) << after;
  EXPECT_NE(after.find("step    40/40"), std::string::npos) << after;
  const auto losses = logged_losses(after);
  ASSERT_FALSE(losses.empty()) << after;
  EXPECT_LT(std::stod(losses.back()), 4.5) << after;
}

}  // namespace
}  // namespace tessera
