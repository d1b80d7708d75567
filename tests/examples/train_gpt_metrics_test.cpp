// train_gpt's progress and metrics, end to end. Without a terminal (a pipe, as in a Slurm log) the
// log has exactly one ISO-8601-stamped line per logged step and no live line; so has a run under
// mpirun (whose ranks write to a pseudo-terminal), unless --progress live asks for the live line. --metrics writes one
// JSON record per logged step with the documented fields and one per validation, and the loss and
// throughput plots beside it, well-formed SVG with one polyline per series and one point per
// record, also when a stop signal ends the run. A resumed run keeps the records up to its checkpoint and appends after
// them (the records the first run wrote past the checkpoint are dropped), records where it resumed with
// what rank count, ZeRO stage and global batch, and its plots mark the resume with that label; a
// "config" record with the effective configuration and the environment opens each run's records; the
// checkpoint holds the effective configuration, which tessera_ckpt info prints. The tests' runs are
// queued together when the suite starts; each test checks its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/python3_on_path.hpp"
#include "tests/support/queued_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/svg_check.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;
using testing::set_flag;
using testing::tiny_run;

// The tests' runs are independent (each test's files in a directory of its own): they are queued
// together when the suite starts (QueuedRuns) and each test checks its own.
class TrainGptMetrics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::start_python3_directly();  // the SVG reader starts python3 often
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("train_gpt_metrics", 5000, 40);
    if (files_->train_gpt.empty()) return;
    for (const char* dir : {"plots", "stopped", "resume"}) std::filesystem::create_directories(files_->dir / dir);
    runs_ = std::make_unique<testing::QueuedRuns>();
    // OneTimeStampedLinePerLoggedStepWithoutATerminal
    runs_->queue("piped", run(3) + " --steps 7", 60);
    // UnderMpirunAutoIsPlainAndLiveCanBeAsked: mpirun gives rank 0 a pseudo-terminal even though its
    // output goes to this test's pipe.
    runs_->queue("mpirun", "mpirun --oversubscribe -np 1 " + run(2) + " --steps 2", 60);
    runs_->queue("live", run(2) + " --steps 2 --progress live", 60);
    runs_->queue("fancy", run(2) + " --steps 2 --progress fancy", 60);
    // MetricsFileAndPlots
    runs_->queue("plots", run(3) + " --steps 7 --metrics " + path("plots/run.jsonl"), 60);
    // AStopSignalStillWritesThePlots: stopped once it has logged step 20 (polled every 0.1 s).
    const std::string log = path("stopped/stopped.log");
    const std::string script = run(5) + " --steps 1000000 --allow-no-checkpoint-dir --metrics " +
                               path("stopped/stopped.jsonl") + " > " + log +
                               " 2>&1 & P=$!; "
                               "for i in $(seq 600); do grep -q \"step    20/\" " +
                               log +
                               " && break; kill -0 $P || break; "
                               "sleep 0.1; done; kill -TERM $P; wait $P; echo job exit $? >> " +
                               log;
    runs_->queue("stopped", "bash -c '" + script + "'", 120);
    // AResumedRunAppendsAfterItsCheckpoint...: the first run, its records as it left them, the resumed
    // run from its step-4 checkpoint and tessera_ckpt info of the checkpoints, one after another.
    runs_->queue("resume", [] {
      std::vector<testing::ProcessResult> results{
          testing::run_bounded(resume_flags() + " --steps 6 --save-every 4", 60)};
      if (results[0].exit_code != 0) return results;
      std::filesystem::copy_file(path("resume/run.jsonl"), path("resume/first.jsonl"));
      results.push_back(testing::run_bounded("mpirun --oversubscribe -np 2 " + resume_flags() +
                                                 " --zero 2 --steps 8 --save-every 4 --resume " + path("resume/ckpt") +
                                                 "/step_0000004",
                                             120));
      results.push_back(testing::run_bounded(
          std::string(std::getenv("TESSERA_BIN_DIR")) + "/tessera_ckpt info " + path("resume/ckpt"), 60));
      return results;
    });
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  // The tiny run, logging every `log_every` steps and validating on the training file every 3.
  static std::string run(int log_every) {
    std::string flags = set_flag(tiny_run(files_->data), "--log-every", std::to_string(log_every));
    flags = set_flag(flags, "--eval-every", "3 --eval-batches 1 --val-data " + files_->data);
    return files_->train_gpt + flags;
  }
  // The resumed test's runs: logging every step, global batch 4, metrics and checkpoints in resume/.
  static std::string resume_flags() {
    return run(1) + " --global-batch 4 --metrics " + path("resume/run.jsonl") + " --checkpoint-dir " +
           path("resume/ckpt");
  }
  static std::string path(const std::string& name) { return (files_->dir / name).string(); }
  static const testing::ProcessResult& result(const std::string& key) { return runs_->result(key); }

  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

std::vector<Json> records(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));  // throws if a line is not JSON
  return out;
}

std::vector<std::int64_t> steps_of(const std::vector<Json>& rs, const std::string& kind) {
  std::vector<std::int64_t> out;
  for (const Json& r : rs) {
    if (r.at("kind") == kind) out.push_back(r.at("step").get<std::int64_t>());
  }
  return out;
}

TEST_F(TrainGptMetrics, OneTimeStampedLinePerLoggedStepWithoutATerminal) {
  const testing::ProcessResult& r = result("piped");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::regex logged(R"(\d\d:\d\d:\d\d step +(\d+)/7  loss [0-9.]+  .*  ETA .*)");
  const std::regex any_step_line(R"(.*step +\d+/7  .*)");
  std::vector<std::string> steps;
  int step_lines = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, logged)) steps.push_back(m[1]);
    if (std::regex_match(line, any_step_line)) ++step_lines;
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"1", "3", "6", "7"})) << "the first, every 3rd and the last\n" << r.output;
  EXPECT_EQ(step_lines, 4) << "no other step lines\n" << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << "no live line in a pipe";
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n\d\d:\d\d:\d\d step +3 \| val loss [0-9.]+\n)"))) << r.output;
}

TEST_F(TrainGptMetrics, UnderMpirunAutoIsPlainAndLiveCanBeAsked) {
  // mpirun gives rank 0 a pseudo-terminal even though its output goes to this test's pipe.
  const testing::ProcessResult& launched = result("mpirun");
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_EQ(launched.output.find('\r'), std::string::npos) << launched.output;
  EXPECT_TRUE(std::regex_search(launched.output, std::regex(R"(\n\d\d:\d\d:\d\d step +2/2  loss)"))) << launched.output;
  const testing::ProcessResult& live = result("live");
  ASSERT_EQ(live.exit_code, 0) << live.output;
  EXPECT_NE(live.output.find("\r\033[Kstep 2/2  loss "), std::string::npos) << "the live line, asked for";
  const testing::ProcessResult& bad = result("fancy");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--progress fancy: use auto, live or plain"), std::string::npos) << bad.output;
}

TEST_F(TrainGptMetrics, MetricsFileAndPlots) {
  const std::string metrics = path("plots/run.jsonl");
  const testing::ProcessResult& r = result("plots");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Json> rs = records(metrics);
  EXPECT_EQ(steps_of(rs, "train"), (std::vector<std::int64_t>{1, 3, 6, 7})) << "one record per logged step";
  EXPECT_EQ(steps_of(rs, "val"), (std::vector<std::int64_t>{0, 3, 6, 7})) << "one per validation";
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(rs[0].at("kind"), "config") << "the run's settings come first";
  EXPECT_EQ(steps_of(rs, "config"), (std::vector<std::int64_t>{0})) << "one, at the start";
  EXPECT_NE(rs[0].at("effective_config").get<std::string>().find("steps = 7"), std::string::npos) << rs[0];
  EXPECT_TRUE(rs[0].at("environment").at("sections").is_array()) << rs[0];
  double elapsed = 0.0;
  for (const Json& rec : rs) {
    if (rec.at("kind") == "config") continue;
    if (rec.at("kind") == "val") {
      EXPECT_TRUE(rec.at("val_loss").is_number()) << rec;
      continue;
    }
    for (const char* field : {"loss", "lr", "grad_norm", "tokens_per_s", "mfu", "elapsed_s"}) {
      EXPECT_TRUE(rec.at(field).is_number()) << field << " in " << rec;
    }
    EXPECT_TRUE(rec.at("skipped").is_boolean()) << rec;
    EXPECT_EQ(rec.at("skipped_steps"), 0) << rec;
    EXPECT_GT(rec.at("tokens_per_s").get<double>(), 0.0) << rec;
    EXPECT_GE(rec.at("elapsed_s").get<double>(), elapsed) << rec;
    elapsed = rec.at("elapsed_s").get<double>();
    for (const char* category :
         {"parameters", "gradients", "optimizer_state", "activations", "comm_buffers", "workspace", "total"}) {
      EXPECT_TRUE(rec.at("memory").at(category).at("current").is_number_integer()) << category << " in " << rec;
      EXPECT_TRUE(rec.at("memory").at(category).at("peak").is_number_integer()) << category << " in " << rec;
    }
    EXPECT_GT(rec.at("memory").at("parameters").at("current").get<std::int64_t>(), 0) << rec;
  }
  // The loss printed for step 7 is the recorded one.
  const std::string printed = std::to_string(rs[rs.size() - 2].at("loss").get<double>()).substr(0, 5);
  EXPECT_NE(r.output.find("step     7/7  loss " + printed), std::string::npos) << printed << "\n" << r.output;

  const auto loss = testing::read_svg_series(path("plots/run.loss.svg"));
  if (!loss) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(loss->parsed) << loss->error;
  EXPECT_EQ(loss->points, (std::map<std::string, int>{{"training_loss", 4}, {"validation_loss", 4}}));
  EXPECT_EQ(loss->circles, loss->points) << "a circle on every point";
  EXPECT_TRUE(loss->markers.empty()) << "no resume";
  const auto throughput = testing::read_svg_series(path("plots/run.throughput.svg"));
  ASSERT_TRUE(throughput && throughput->parsed) << (throughput ? throughput->error : "");
  EXPECT_EQ(throughput->points, (std::map<std::string, int>{{"tokens/s", 4}}));
  EXPECT_EQ(throughput->circles, throughput->points);
  ASSERT_FALSE(throughput->y_ticks.empty());
  EXPECT_EQ(throughput->y_ticks.front(), 0.0) << "tokens/s from zero";
}

TEST_F(TrainGptMetrics, AStopSignalStillWritesThePlots) {
  const std::string metrics = path("stopped/stopped.jsonl"), log = path("stopped/stopped.log");
  (void)result("stopped");  // its log, metrics and plots are in stopped/
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("stop signal: stopping after step"), std::string::npos) << out;
  EXPECT_NE(out.find("job exit 0"), std::string::npos) << out;
  EXPECT_GE(steps_of(records(metrics), "train").size(), 5u) << out;
  EXPECT_TRUE(std::filesystem::exists(path("stopped/stopped.loss.svg"))) << out;
  EXPECT_TRUE(std::filesystem::exists(path("stopped/stopped.throughput.svg"))) << out;
}

TEST_F(TrainGptMetrics, AResumedRunAppendsAfterItsCheckpointAndTheCheckpointHoldsTheConfiguration) {
  const std::string metrics = path("resume/run.jsonl"), ckpt = path("resume/ckpt");
  const std::vector<testing::ProcessResult>& runs = runs_->results("resume");
  const testing::ProcessResult& first = runs[0];
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(std::regex_search(first.output, std::regex("checkpoint: saved step 4 to " + ckpt +
                                                         R"(/step_0000004 \([0-9.]+ [KM]iB in [0-9.]+ s\))")))
      << first.output;
  const std::vector<Json> before = records(path("resume/first.jsonl"));  // as the first run left it
  EXPECT_EQ(steps_of(before, "train"), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));

  // The run ended saved at step 6; resuming from step 4 (as after a crash before the final save), on
  // two ranks at ZeRO-2, drops the records the first run wrote after it.
  const testing::ProcessResult& resumed = runs.at(1);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::vector<Json> after = records(metrics);
  EXPECT_EQ(steps_of(after, "resume"), (std::vector<std::int64_t>{4}));
  for (const Json& rec : after) {
    if (rec.at("kind") != "resume") continue;
    EXPECT_EQ(rec.at("ranks"), 2) << rec;
    EXPECT_EQ(rec.at("zero_stage"), 2) << rec;
    EXPECT_EQ(rec.at("global_batch"), 4) << rec;
    EXPECT_EQ(rec.at("steps_redone"), 2) << "steps 5 and 6 of the first run, trained again: " << rec;
  }
  const std::vector<std::string> marker{"resumed at step 4: 2 ranks, ZeRO-2, global batch 4; 2 steps redone"};
  for (const char* plot : {"run.loss.svg", "run.throughput.svg"}) {
    const auto svg = testing::read_svg_series(path(std::string("resume/") + plot));
    if (!svg) break;  // python3 missing: MetricsFileAndPlots says so
    ASSERT_TRUE(svg->parsed) << plot << ": " << svg->error;
    EXPECT_EQ(svg->markers, marker) << plot;
  }
  EXPECT_EQ(steps_of(after, "train"), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}))
      << "steps 5 and 6 of the first run were dropped and written again by the resumed one";
  EXPECT_EQ(steps_of(after, "val"), (std::vector<std::int64_t>{0, 3, 4, 6, 8}))
      << "validations up to step 3 kept, step 4 measured again at the resume, then 6 and 8";
  EXPECT_EQ(steps_of(after, "config"), (std::vector<std::int64_t>{0, 4})) << "the resumed run adds its settings";
  for (const Json& rec : after) {
    if (rec.at("kind") == "config" && rec.at("step") == 4) {
      EXPECT_NE(rec.at("effective_config").get<std::string>().find("steps = 8"), std::string::npos) << rec;
    }
  }
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(after[i], before[i]) << "kept as written";
  ASSERT_GE(after.size(), 9u);
  EXPECT_EQ(after[7].at("kind"), "config") << "after the records kept (config 0; validations 0, 3; steps 1-4)";
  EXPECT_EQ(after[8].at("kind"), "resume") << "right after the resumed run's settings";
  EXPECT_GE(after.back().at("elapsed_s").get<double>(), before[5].at("elapsed_s").get<double>())
      << "elapsed goes on from the records kept";

  const testing::ProcessResult& info = runs.at(2);
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("configuration  the options of the run that saved it:"), std::string::npos) << info.output;
  for (const std::string& line :
       std::vector<std::string>{"  steps = 8 +# command line", "  resume = " + ckpt + "/step_0000004 +# command line",
                                "  lr = 0.001 +# default", "  metrics = " + metrics + " +# command line"}) {
    EXPECT_TRUE(std::regex_search(info.output, std::regex(line))) << "no line matching '" << line << "' in\n"
                                                                  << info.output;
  }
}

}  // namespace
}  // namespace tessera
