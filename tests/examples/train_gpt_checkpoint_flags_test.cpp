// train_gpt's checkpoint flag rules (examples/train_gpt/checkpoint_flags.hpp): --save-every or
// --resume auto without --checkpoint-dir, and a run of more than 1000 steps without it, exit 1
// before any data is read, naming the flags and what to change; 1000 steps, or more with
// --allow-no-checkpoint-dir, run; --help states the rule. The tests' runs are queued together when
// the suite starts; each test checks its own.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::set_flag;
using testing::tiny_run;

// The flags of each refused run (RefusedBeforeAnyDataIsRead) and what its message must say.
struct RefusedCase {
  std::string args;
  std::vector<std::string> parts;
};
const std::vector<RefusedCase> kRefused = {
    {"--steps 10 --save-every 5",
     {"--save-every 5", "no --checkpoint-dir", "add --checkpoint-dir DIR, or drop --save-every"}},
    {"--steps 10 --resume auto", {"--resume auto", "no --checkpoint-dir", "add --checkpoint-dir DIR"}},
    {"--steps 1001",
     {"--steps 1001 without --checkpoint-dir", "more than 1000 steps would save nothing", "stop signal",
      "Add --checkpoint-dir DIR", "--allow-no-checkpoint-dir"}},
    {"--steps 1001 --save-every 100 --allow-no-checkpoint-dir", {"--save-every 100", "no --checkpoint-dir"}},
};

// The tests' runs are independent: they are queued together when the suite starts (QueuedRuns) and
// each test checks its own.
class CheckpointFlags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("checkpoint_flags", 5000, 40);
    if (files_->train_gpt.empty()) return;
    runs_ = std::make_unique<testing::QueuedRuns>();
    // AThousandStepsOrTheFlagRun: the longest, first.
    runs_->queue("1000 steps", files_->train_gpt + quiet(1000) + " --steps 1000", 120);
    runs_->queue("1001 steps", files_->train_gpt + quiet(1001) + " --steps 1001 --allow-no-checkpoint-dir", 120);
    // RefusedBeforeAnyDataIsRead: a data file that does not exist (refused before it would be opened).
    const std::string missing = (files_->dir / "missing.bin").string();
    for (std::size_t i = 0; i < kRefused.size(); ++i) {
      runs_->queue("refused" + std::to_string(i), files_->train_gpt + tiny_run(missing) + " " + kRefused[i].args, 60);
    }
    // HelpStatesTheRule
    runs_->queue("help", files_->train_gpt + " --help", 30);
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  // The tiny run logging only every `log_every` steps.
  static std::string quiet(int log_every) {
    return set_flag(tiny_run(files_->data), "--log-every", std::to_string(log_every));
  }

  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

TEST_F(CheckpointFlags, RefusedBeforeAnyDataIsRead) {
  for (std::size_t i = 0; i < kRefused.size(); ++i) {
    const RefusedCase& c = kRefused[i];
    const testing::ProcessResult& r = runs_->result("refused" + std::to_string(i));
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    for (const std::string& part : c.parts) {
      EXPECT_NE(r.output.find(part), std::string::npos) << c.args << ": expected \"" << part << "\" in\n" << r.output;
    }
    EXPECT_EQ(r.output.find("missing.bin"), std::string::npos) << c.args << ": the data was opened\n" << r.output;
  }
}

TEST_F(CheckpointFlags, AThousandStepsOrTheFlagRun) {
  const testing::ProcessResult& thousand = runs_->result("1000 steps");
  EXPECT_EQ(thousand.exit_code, 0) << thousand.output;
  EXPECT_NE(thousand.output.find("step  1000/1000  loss"), std::string::npos) << thousand.output;
  const testing::ProcessResult& allowed = runs_->result("1001 steps");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("step  1001/1001  loss"), std::string::npos) << allowed.output;
}

TEST_F(CheckpointFlags, HelpStatesTheRule) {
  const testing::ProcessResult& r = runs_->result("help");
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
