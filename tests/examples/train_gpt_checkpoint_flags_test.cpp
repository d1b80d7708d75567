// train_gpt's checkpoint flag rules (examples/train_gpt/checkpoint_flags.hpp): --save-every or
// --resume auto without --checkpoint-dir, and a run of more than 1000 steps without it, exit 1
// before any data is read, naming the flags and what to change; 1000 steps, or more with
// --allow-no-checkpoint-dir, run; --help states the rule.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::set_flag;
using testing::tiny_run;

class CheckpointFlags : public testing::TrainGptTest {
 protected:
  CheckpointFlags() : TrainGptTest("checkpoint_flags", 5000, 40) {}
  // The tiny run logging only every `log_every` steps.
  std::string quiet(int log_every) const { return set_flag(tiny_run(data_), "--log-every", std::to_string(log_every)); }
};

TEST_F(CheckpointFlags, RefusedBeforeAnyDataIsRead) {
  struct Case {
    std::string args;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"--steps 10 --save-every 5",
       {"--save-every 5", "no --checkpoint-dir", "add --checkpoint-dir DIR, or drop --save-every"}},
      {"--steps 10 --resume auto", {"--resume auto", "no --checkpoint-dir", "add --checkpoint-dir DIR"}},
      {"--steps 1001",
       {"--steps 1001 without --checkpoint-dir", "more than 1000 steps would save nothing", "stop signal",
        "Add --checkpoint-dir DIR", "--allow-no-checkpoint-dir"}},
      {"--steps 1001 --save-every 100 --allow-no-checkpoint-dir", {"--save-every 100", "no --checkpoint-dir"}},
  };
  // A data file that does not exist: the flags are refused before it would be opened.
  const std::string missing = (dir_ / "missing.bin").string();
  std::vector<std::string> commands;  // independent runs: at once
  for (const Case& c : cases) commands.push_back(train_gpt_ + tiny_run(missing) + " " + c.args);
  const std::vector<testing::ProcessResult> results = testing::run_concurrently(commands, 60);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const testing::ProcessResult& r = results[i];
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    for (const std::string& part : c.parts) {
      EXPECT_NE(r.output.find(part), std::string::npos) << c.args << ": expected \"" << part << "\" in\n" << r.output;
    }
    EXPECT_EQ(r.output.find("missing.bin"), std::string::npos) << c.args << ": the data was opened\n" << r.output;
  }
}

TEST_F(CheckpointFlags, AThousandStepsOrTheFlagRun) {
  const std::vector<testing::ProcessResult> runs =
      testing::run_concurrently({train_gpt_ + quiet(1000) + " --steps 1000",
                                 train_gpt_ + quiet(1001) + " --steps 1001 --allow-no-checkpoint-dir"},
                                120);
  const testing::ProcessResult& thousand = runs[0];
  EXPECT_EQ(thousand.exit_code, 0) << thousand.output;
  EXPECT_NE(thousand.output.find("step  1000/1000  loss"), std::string::npos) << thousand.output;
  const testing::ProcessResult& allowed = runs[1];
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("step  1001/1001  loss"), std::string::npos) << allowed.output;
}

TEST_F(CheckpointFlags, HelpStatesTheRule) {
  const auto r = run_bounded(train_gpt_ + " --help", 30);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The help wraps its descriptions: compare with runs of spaces and line breaks made one space.
  const std::string text = std::regex_replace(r.output, std::regex(R"(\s+)"), " ");
  for (const std::string part : {"--allow-no-checkpoint-dir run more than 1000 steps without --checkpoint-dir",
                                 "needed by --save-every, --resume auto and runs of more than 1000 steps"}) {
    EXPECT_NE(text.find(part), std::string::npos) << "expected \"" << part << "\" in\n" << r.output;
  }
}

}  // namespace
}  // namespace tessera
