// train_gpt --tensorboard, read back by TensorBoard itself: a run that is resumed from an earlier
// checkpoint leaves two event files in the directory, and tensorboard's EventAccumulator (from a
// virtual environment under the build directory with `pip install tensorboard`, the wheels of
// tests/support/venv_locks/tensorboard.txt where they serve, made once and kept)
// sees every step once — the steps the first run wrote past the checkpoint dropped — with the values
// of the metrics file. Without python3-venv or PyPI the test skips and says which. A directory that
// cannot be made fails before step 1, naming the flag and the path. The venv is made, and the tests'
// runs are queued, when the suite starts.
// tessera-test-timeout: 600
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/python_venv.hpp"
#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::set_flag;
using testing::tiny_run;

struct Venv {
  std::string python;  // "" when there is none
  std::string why;     // why not
};

// The venv's python with tensorboard installed, made on first use (most of a first run's time: it is
// made while train_gpt runs).
std::future<Venv> tensorboard_venv() {
  return std::async(std::launch::async, [] {
    Venv venv;
    venv.python = testing::venv_python({"TESSERA_TENSORBOARD_VENV", "import tensorboard", "tensorboard", 480,
                                        "tests/support/venv_locks/tensorboard.txt"},
                                       &venv.why);
    return venv;
  });
}

// Every scalar TensorBoard's EventAccumulator reads from `logdir` ({tag: [[step, value], ...]}),
// and each event file's first event ({"files": [[name, file_version], ...]}).
const char* kReader = R"PY(
import json, math, os, sys
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
logdir = sys.argv[1]
acc = event_accumulator.EventAccumulator(logdir, size_guidance={event_accumulator.SCALARS: 0})
acc.Reload()
out = {"scalars": {}, "files": []}
for tag in acc.Tags()["scalars"]:
    out["scalars"][tag] = [[e.step, None if math.isnan(e.value) else e.value] for e in acc.Scalars(tag)]
for name in sorted(os.listdir(logdir)):
    first = next(iter(event_file_loader.EventFileLoader(os.path.join(logdir, name)).Load()))
    out["files"].append([name, first.file_version])
print(json.dumps(out))
)PY";

// The venv is made, and the tests' runs are queued, when the suite starts (QueuedRuns): the venv
// (most of a first run's time) is made while train_gpt runs, and the runs of the second test go on
// beside those of the first.
class TrainGptTensorBoard : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("train_gpt_tensorboard", 5000, 40);
    if (files_->train_gpt.empty()) return;
    venv_ = tensorboard_venv().share();
    runs_ = std::make_unique<testing::QueuedRuns>();
    // TensorBoardReadsEveryStepOnceAcrossAResume: 6 steps saved at step 4, the event files it left,
    // then resumed from step 4, as after a crash (steps 5 and 6 of the first run are stale).
    runs_->queue("first, resumed", [] {
      const std::string flags = run() + " --tensorboard " + path("tb") + " --metrics " + path("run.jsonl") +
                                " --checkpoint-dir " + path("ckpt");
      std::vector<testing::ProcessResult> results{testing::run_bounded(flags + " --steps 6 --save-every 4", 60)};
      if (results[0].exit_code != 0) return results;
      const auto files = std::distance(fs::directory_iterator(path("tb")), fs::directory_iterator());
      results.push_back({0, std::to_string(files)});  // the event files after the first run
      results.push_back(
          testing::run_bounded(flags + " --steps 8 --save-every 4 --resume " + path("ckpt/step_0000004"), 60));
      return results;
    });
    // ADirectoryThatCannotBeMadeFailsBeforeTheFirstStep
    std::ofstream(path("file")) << "in the way";
    runs_->queue("bad directory", run() + " --steps 3 --tensorboard " + path("file/tb"), 60);
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    if (venv_.valid()) venv_.wait();
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  static std::string run() {
    return files_->train_gpt +
           set_flag(tiny_run(files_->data), "--eval-every", "3 --eval-batches 1 --val-data " + files_->data);
  }
  static std::string path(const std::string& name) { return (files_->dir / name).string(); }

  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
  static inline std::shared_future<Venv> venv_;
};

std::vector<Json> metrics_records(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TEST_F(TrainGptTensorBoard, TensorBoardReadsEveryStepOnceAcrossAResume) {
  const std::string tb = path("tb"), metrics = path("run.jsonl");
  const std::vector<testing::ProcessResult>& runs = runs_->results("first, resumed");
  const testing::ProcessResult& first = runs[0];
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(runs.at(1).output, "1") << "one event file";
  const testing::ProcessResult& resumed = runs.at(2);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  const auto& [python, why] = venv_.get();
  if (python.empty()) GTEST_SKIP() << why;
  const std::string script = path("read_events.py");
  std::ofstream(script) << kReader;
  const auto read = testing::run_bounded(python + " " + script + " " + tb + " 2>/dev/null", 120);
  ASSERT_EQ(read.exit_code, 0) << read.output;
  const Json events = Json::parse(read.output.substr(read.output.find('{')));

  ASSERT_EQ(events.at("files").size(), 2u) << events.dump() << ": the resumed run adds a file";
  for (const Json& file : events.at("files")) {
    EXPECT_EQ(file.at(0).get<std::string>().rfind("events.out.tfevents.", 0), 0u) << file;
    EXPECT_EQ(file.at(1), "brain.Event:2") << file;
  }
  const Json& scalars = events.at("scalars");
  for (const char* tag :
       {"train/loss", "train/lr", "train/grad_norm", "train/skipped_steps", "perf/tokens_per_s", "perf/mfu",
        "memory/current_mib", "memory/peak_mib", "memory/peak_mib/parameters", "val/loss"}) {
    EXPECT_TRUE(scalars.contains(tag)) << tag << " missing from " << scalars.dump();
  }
  // The metrics file holds what the run reported; TensorBoard must show the same, once per step.
  std::vector<std::int64_t> metric_steps, tb_steps;
  std::vector<double> metric_loss, tb_loss;
  for (const Json& r : metrics_records(metrics)) {
    if (r.at("kind") != "train") continue;
    metric_steps.push_back(r.at("step"));
    metric_loss.push_back(r.at("loss"));
  }
  for (const Json& e : scalars.at("train/loss")) {
    tb_steps.push_back(e.at(0));
    tb_loss.push_back(e.at(1));
  }
  EXPECT_EQ(metric_steps, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(tb_steps, metric_steps) << "steps 5 and 6 of the first run dropped by the resumed run's START";
  ASSERT_EQ(tb_loss.size(), metric_loss.size());
  for (std::size_t i = 0; i < tb_loss.size(); ++i) {
    EXPECT_NEAR(tb_loss[i], metric_loss[i], 1e-6 * std::fabs(metric_loss[i])) << "step " << tb_steps[i];
  }
  for (const Json& e : scalars.at("perf/tokens_per_s")) EXPECT_GT(e.at(1).get<double>(), 0.0) << e;
  for (const Json& e : scalars.at("memory/peak_mib")) EXPECT_GT(e.at(1).get<double>(), 0.0) << e;
  std::vector<std::int64_t> val_steps;
  for (const Json& e : scalars.at("val/loss")) val_steps.push_back(e.at(0));
  EXPECT_EQ(val_steps, (std::vector<std::int64_t>{0, 3, 4, 6, 8}))
      << "the first run's validations up to step 4 (its step 6 dropped), the resumed run's from step 4 on";
}

TEST_F(TrainGptTensorBoard, ADirectoryThatCannotBeMadeFailsBeforeTheFirstStep) {
  const std::string bad = path("file/tb");
  const testing::ProcessResult& r = runs_->result("bad directory");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--tensorboard " + bad + ": "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 1/3"), std::string::npos) << "no step ran\n" << r.output;
}

}  // namespace
}  // namespace tessera
