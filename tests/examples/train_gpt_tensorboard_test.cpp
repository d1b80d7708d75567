// train_gpt --tensorboard, read back by TensorBoard itself: a run that is resumed from an earlier
// checkpoint leaves two event files in the directory, and tensorboard's EventAccumulator (from a
// virtual environment under the build directory with `pip install tensorboard`, the wheels of
// tests/support/venv_locks/tensorboard.txt where they serve, made once and kept)
// sees every step once — the steps the first run wrote past the checkpoint dropped — with the values
// of the metrics file. Without python3-venv or PyPI the test skips and says which. A directory that
// cannot be made fails before step 1, naming the flag and the path.
// tessera-test-timeout: 600
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/python_venv.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::run_bounded;
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

class TrainGptTensorBoard : public testing::TrainGptTest {
 protected:
  TrainGptTensorBoard() : TrainGptTest("train_gpt_tensorboard", 5000, 40) {}
  std::string run() const {
    return train_gpt_ + set_flag(tiny_run(data_), "--eval-every", "3 --eval-batches 1 --val-data " + data_);
  }
};

std::vector<Json> records(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TEST_F(TrainGptTensorBoard, TensorBoardReadsEveryStepOnceAcrossAResume) {
  std::future<Venv> venv = tensorboard_venv();
  const std::string tb = (dir_ / "tb").string(), metrics = (dir_ / "run.jsonl").string();
  const std::string flags =
      run() + " --tensorboard " + tb + " --metrics " + metrics + " --checkpoint-dir " + (dir_ / "ckpt").string();
  const auto first = run_bounded(flags + " --steps 6 --save-every 4", 60);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(std::distance(fs::directory_iterator(tb), fs::directory_iterator()), 1) << "one event file";
  // Resumed from step 4, as after a crash: steps 5 and 6 of the first run are stale.
  const auto resumed =
      run_bounded(flags + " --steps 8 --save-every 4 --resume " + (dir_ / "ckpt" / "step_0000004").string(), 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  const auto [python, why] = venv.get();
  if (python.empty()) GTEST_SKIP() << why;
  const std::string script = (dir_ / "read_events.py").string();
  std::ofstream(script) << kReader;
  const auto read = run_bounded(python + " " + script + " " + tb + " 2>/dev/null", 120);
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
  for (const Json& r : records(metrics)) {
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
  std::ofstream(dir_ / "file") << "in the way";
  const std::string bad = (dir_ / "file" / "tb").string();
  const auto r = run_bounded(run() + " --steps 3 --tensorboard " + bad, 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--tensorboard " + bad + ": "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 1/3"), std::string::npos) << "no step ran\n" << r.output;
}

}  // namespace
}  // namespace tessera
