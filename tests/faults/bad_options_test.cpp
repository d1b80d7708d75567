// train_gpt refuses, before it allocates anything, values no run can train with: non-finite or
// negative numbers, betas outside [0, 1), validation with no batches, negative thread counts and
// counts. Each message names the flag and the value and says what is expected. A resume with another
// --seed than the checkpoint's warns and says what the seed still changes.
// The refusals (and the run with validation off) share nothing and run at once, each checked as
// before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::ScratchDir;
using testing::tiny_run;
using testing::train_gpt_binary;

TEST(BadOptions, ImpossibleValuesAreRefusedWithTheFlagAndValue) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("bad_options");
  const std::string data = (dir / "tokens.bin").string();
  write_token_file(data, random_tokens(5000, 40));
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--lr nan", "--lr nan: must be a finite number"},
      {"--lr inf", "--lr inf: must be a finite number"},
      {"--weight-decay nan", "--weight-decay nan: must be a finite number"},
      {"--weight-decay -0.1", "--weight-decay -0.1: must be >= 0"},
      {"--grad-clip inf", "--grad-clip inf: must be a finite number"},
      {"--grad-clip -1", "--grad-clip -1: must be >= 0"},
      {"--beta1 1", "--beta1 1: must be in [0, 1)"},
      {"--beta2 -0.5", "--beta2 -0.5: must be in [0, 1)"},
      {"--beta2 nan", "--beta2 nan: must be in [0, 1)"},
      {"--min-lr-ratio 2", "--min-lr-ratio 2: must be in [0, 1]"},
      {"--eval-every 10 --eval-batches 0", "--eval-batches 0: must be positive while validation is on"},
      {"--threads -2", "--threads -2: must be >= 0"},
      {"--temperature 0", "--temperature 0: must be positive"},
      {"--max-skipped-steps -1", "--max-skipped-steps -1: must be >= 0"},
      {"--spike-z 0", "--spike-z 0: must be a positive number"},
      {"--spike-window 1", "--spike-window 1: must be at least 2 steps"},
      {"--save-every -5", "--save-every -5: must be >= 0"},
  };
  // The tiny run's flags without the two the cases set themselves.
  std::string base = tiny_run(data);
  for (const std::string flag : {" --eval-every 0", " --threads 1"}) base.erase(base.find(flag), flag.size());
  const auto with_defaults = [](const std::string& args) {
    return args + (args.find("--eval-every") == std::string::npos ? " --eval-every 0" : "") +
           (args.find("--threads") == std::string::npos ? " --threads 1" : "");
  };
  std::vector<std::string> commands;
  for (const Case& c : cases) commands.push_back(train_gpt + base + " --steps 1 " + with_defaults(c.args));
  // Validation off: no batches is fine.
  commands.push_back(train_gpt + base + " --steps 1 " + with_defaults("--eval-batches 0"));
  const std::vector<testing::ProcessResult> results = testing::run_bounded_all(commands, 60);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto& r = results[i];
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\nexpected: " << c.message << "\n" << r.output;
    EXPECT_EQ(r.output.find("train_gpt: GPT"), std::string::npos) << c.args << " started training:\n" << r.output;
  }
  const auto& off = results.back();
  EXPECT_EQ(off.exit_code, 0) << off.output;
}

TEST(BadOptions, ADifferentSeedOnResumeWarnsWhatItStillAffects) {
  const std::string train_gpt = train_gpt_binary();
  if (train_gpt.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  ScratchDir dir("resume_seed");
  const std::string data = (dir / "tokens.bin").string(), run_dir = (dir / "run").string();
  write_token_file(data, random_tokens(5000, 40));
  const auto first =
      run_bounded(train_gpt + tiny_run(data) + " --steps 2 --save-every 2 --checkpoint-dir " + run_dir, 60);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string resume = train_gpt + tiny_run(data) + " --steps 3 --checkpoint-dir " + run_dir + " --resume auto";
  const auto same = run_bounded(resume, 60);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(same.output.find("warning: --seed"), std::string::npos) << same.output;
  const auto other = run_bounded(resume + " --seed 7", 60);
  EXPECT_EQ(other.exit_code, 0) << other.output;
  for (const char* part : {"warning: --seed 7 differs from the seed 1337", "data order", "Pass --seed 1337"}) {
    EXPECT_NE(other.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << other.output;
  }
}

}  // namespace
}  // namespace tessera
