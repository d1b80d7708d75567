// train_gpt --config: a config file sets what the command line does not (the command line wins),
// the effective configuration printed at start says where each value came from; an unknown key, a
// value of the wrong type and a value out of range each stop the run before it trains, with the
// file, the line and what is accepted. --device: auto runs on the CPU here and says so; cuda without
// a usable GPU is one line on stderr and a non-zero exit; --comm and --gemm-math name their values when
// refused, and a CPU run takes any of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tessera/runtime/device_factory.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::tiny_run;

class TrainGptConfig : public testing::TrainGptTest {
 protected:
  TrainGptConfig() : TrainGptTest("train_gpt_config", 5000, 40) {}
  std::string write_ini(const std::string& text) const {
    const std::string path = (dir_ / "run.ini").string();
    std::ofstream(path) << text;
    return path;
  }
  // The same in a directory of its own, <dir>/<index>/run.ini (the messages name the file run.ini).
  std::string write_ini(const std::string& text, std::size_t index) const {
    const std::filesystem::path dir = dir_ / std::to_string(index);
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "run.ini").string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(TrainGptConfig, FileValuesUnlessTheCommandLineSetsThem) {
  const std::string ini = write_ini("# tiny run\n[model]\nlayers = 3\n[train]\nlr = 0.002\nsteps = 9\n");
  std::string flags = tiny_run(data_);
  flags.erase(flags.find(" --layers 2"), 11);  // the file sets it
  const std::vector<testing::ProcessResult> runs =  // printed and quiet, at once
      testing::run_concurrently({train_gpt_ + flags + " --config " + ini + " --steps 2 --print-config",
                                 train_gpt_ + flags + " --config " + ini + " --steps 2"},
                                60);
  const testing::ProcessResult& r = runs[0];
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPT L=3 C=32"), std::string::npos) << "layers from the file\n" << r.output;
  EXPECT_NE(r.output.find("step     2/2"), std::string::npos) << "--steps 2 wins over steps = 9\n" << r.output;
  EXPECT_EQ(r.output.find("step     3/"), std::string::npos) << r.output;
  for (const std::string& line : std::vector<std::string>{"layers = 3 +# " + ini + ":3", "lr = 0.002 +# " + ini + ":5",
                                                          "steps = 2 +# command line \\(over " + ini + ":6\\)",
                                                          "warmup = 20 +# default", "dim = 32 +# command line"}) {
    EXPECT_TRUE(std::regex_search(r.output, std::regex(line))) << "no line matching '" << line << "' in\n" << r.output;
  }
  const testing::ProcessResult& quiet = runs[1];
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("# default"), std::string::npos) << "printed without --print-config\n" << quiet.output;
}

TEST_F(TrainGptConfig, BadKeysAndValuesNameFileAndLine) {
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"[model]\nlayerz = 3\n", "run.ini:2: unknown key 'layerz' (in section [model]); did you mean 'layers'?"},
      {"steps = 2\nlayers = three\n", "run.ini:2: layers = three: not a valid value; layers takes a whole number"},
      {"spike-guard = sometimes\n",
       "run.ini:1: spike-guard = sometimes: not a valid value; spike-guard takes true or false"},
      {"\n[train]\nmin-lr-ratio = 2\n", "run.ini:3: min-lr-ratio = 2: --min-lr-ratio 2: must be in [0, 1]"},
      {"zero = 7\n", "run.ini:1: zero = 7: --zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
      {"seed = -4\n", "run.ini:1: seed = -4: seed takes a whole number >= 0"},
  };
  std::vector<std::string> commands;  // independent runs, each with its own file: at once
  for (std::size_t i = 0; i < cases.size(); ++i) {
    commands.push_back(train_gpt_ + tiny_run(data_) + " --steps 1 --config " + write_ini(cases[i].text, i));
  }
  const std::vector<testing::ProcessResult> results = testing::run_concurrently(commands, 60);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const testing::ProcessResult& r = results[i];
    EXPECT_NE(r.exit_code, 0) << c.text << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << "file:\n"
                                                           << c.text << "expected: " << c.message << "\n"
                                                           << r.output;
    EXPECT_EQ(r.output.find("step     1/1"), std::string::npos) << c.text << " trained anyway:\n" << r.output;
  }
}

TEST_F(TrainGptConfig, DeviceCudaWithoutAGpuIsOneLine) {
  if (device_available(DeviceChoice::kCuda)) GTEST_SKIP() << "a GPU is usable here: --device cuda would run";
  const std::string err = (dir_ / "stderr.txt").string();
  const auto r =
      run_bounded("bash -c '" + train_gpt_ + tiny_run(data_) + " --steps 1 --device cuda 2>" + err + "'", 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  std::ifstream in(err);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u) << "stderr:\n"
                              << [&] {
                                   std::string all;
                                   for (const auto& l : lines) all += l + "\n";
                                   return all;
                                 }();
  EXPECT_EQ(lines[0].rfind("train_gpt: device cuda: ", 0), 0u) << lines[0];
  EXPECT_EQ(r.output.find("step "), std::string::npos) << "nothing ran:\n" << r.output;
}

TEST_F(TrainGptConfig, DeviceAutoRunsOnTheCpuAndSaysSo) {
  if (device_available(DeviceChoice::kCuda)) GTEST_SKIP() << "a GPU is usable here: auto picks it";
  const std::vector<testing::ProcessResult> runs = testing::run_concurrently(
      {train_gpt_ + tiny_run(data_) + " --steps 1 --device auto", train_gpt_ + tiny_run(data_) + " --steps 1 --device gpu"},
      60);
  const testing::ProcessResult& r = runs[0];
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("device: cpu (auto: no usable GPU)"), std::string::npos) << r.output;
  const testing::ProcessResult& bad = runs[1];
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--device gpu: use cpu, cuda, auto or sim-gpu"), std::string::npos) << bad.output;
}

TEST_F(TrainGptConfig, AnUnknownGemmMathIsRefusedBeforeAnythingRuns) {
  const auto r = run_bounded(train_gpt_ + tiny_run(data_) + " --steps 1 --gemm-math fp8", 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--gemm-math"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fp8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tf32"), std::string::npos) << "the accepted values are named:\n" << r.output;
  EXPECT_EQ(r.output.find("step "), std::string::npos) << "nothing ran:\n" << r.output;
}

TEST_F(TrainGptConfig, AnUnknownCommIsRefusedBeforeAnythingRuns) {
  const auto r = run_bounded(train_gpt_ + tiny_run(data_) + " --steps 1 --comm gloo", 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const char* word : {"--comm gloo", "auto", "nccl", "mpi"}) {
    EXPECT_NE(r.output.find(word), std::string::npos) << word << " missing from:\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step "), std::string::npos) << "nothing ran:\n" << r.output;
}

TEST_F(TrainGptConfig, TheCpuTakesEveryCommAndGemmMath) {
  // Neither setting changes a CPU run (the MPI world serves it, in f32): both are accepted there.
  const auto r = run_bounded(train_gpt_ + tiny_run(data_) + " --steps 1 --device cpu --comm nccl --gemm-math bf16", 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("collectives:"), std::string::npos) << "a CPU run has no device world:\n" << r.output;
}

}  // namespace
}  // namespace tessera
