// train_gpt --config: a config file sets what the command line does not (the command line wins),
// the effective configuration printed at start says where each value came from; an unknown key, a
// value of the wrong type and a value out of range each stop the run before it trains, with the
// file, the line and what is accepted. --device: auto runs on the CPU here and says so; cuda without
// a usable GPU is one line on stderr and a non-zero exit; --comm and --gemm-math name their values when
// refused, and a CPU run takes any of them. The tests' runs are independent: they are queued together
// when the suite starts (QueuedRuns) and each test checks its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tessera/runtime/device_factory.hpp"
#include "tests/support/queued_runs.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::ProcessResult;
using testing::tiny_run;

// The config file text and the message of each refused file (BadKeysAndValuesNameFileAndLine).
struct BadFile {
  std::string text, message;
};
const std::vector<BadFile> kBadFiles = {
    {"[model]\nlayerz = 3\n", "run.ini:2: unknown key 'layerz' (in section [model]); did you mean 'layers'?"},
    {"steps = 2\nlayers = three\n", "run.ini:2: layers = three: not a valid value; layers takes a whole number"},
    {"spike-guard = sometimes\n",
     "run.ini:1: spike-guard = sometimes: not a valid value; spike-guard takes true or false"},
    {"\n[train]\nmin-lr-ratio = 2\n", "run.ini:3: min-lr-ratio = 2: --min-lr-ratio 2: must be in [0, 1]"},
    {"zero = 7\n", "run.ini:1: zero = 7: --zero 7: the ZeRO stage must be 0, 1, 2 or 3"},
    {"seed = -4\n", "run.ini:1: seed = -4: seed takes a whole number >= 0"},
};

const char* kFileValues = "# tiny run\n[model]\nlayers = 3\n[train]\nlr = 0.002\nsteps = 9\n";

class TrainGptConfig : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("train_gpt_config", 5000, 40);
    if (files_->train_gpt.empty()) return;
    runs_ = std::make_unique<testing::QueuedRuns>();
    const std::string run = files_->train_gpt + tiny_run(files_->data);
    // FileValuesUnlessTheCommandLineSetsThem: the file sets --layers, printed and quiet.
    std::string flags = tiny_run(files_->data);
    flags.erase(flags.find(" --layers 2"), 11);
    const std::string ini = write_ini("values", kFileValues);
    runs_->queue("print-config", files_->train_gpt + flags + " --config " + ini + " --steps 2 --print-config", 60);
    runs_->queue("quiet", files_->train_gpt + flags + " --config " + ini + " --steps 2", 60);
    // BadKeysAndValuesNameFileAndLine: each file in a directory of its own, named run.ini.
    for (std::size_t i = 0; i < kBadFiles.size(); ++i) {
      runs_->queue("bad" + std::to_string(i),
                   run + " --steps 1 --config " + write_ini("bad" + std::to_string(i), kBadFiles[i].text), 60);
    }
    // DeviceCudaWithoutAGpuIsOneLine: stderr alone, in a file.
    runs_->queue("cuda", "bash -c '" + run + " --steps 1 --device cuda 2>" + stderr_file() + "'", 60);
    // DeviceAutoRunsOnTheCpuAndSaysSo, AnUnknownGemmMathIs..., AnUnknownCommIs..., TheCpuTakes...
    runs_->queue("auto", run + " --steps 1 --device auto", 60);
    runs_->queue("gpu", run + " --steps 1 --device gpu", 60);
    runs_->queue("fp8", run + " --steps 1 --gemm-math fp8", 60);
    runs_->queue("gloo", run + " --steps 1 --comm gloo", 60);
    runs_->queue("cpu nccl bf16", run + " --steps 1 --device cpu --comm nccl --gemm-math bf16", 60);
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  // `text` as <dir>/<name>/run.ini (the messages name the file run.ini); its path.
  static std::string write_ini(const std::string& name, const std::string& text) {
    const std::filesystem::path dir = files_->dir / name;
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "run.ini").string();
    std::ofstream(path) << text;
    return path;
  }
  static std::string ini_of(const std::string& name) { return (files_->dir / name / "run.ini").string(); }
  static std::string stderr_file() { return (files_->dir / "stderr.txt").string(); }
  static const ProcessResult& result(const std::string& key) { return runs_->result(key); }

  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

TEST_F(TrainGptConfig, FileValuesUnlessTheCommandLineSetsThem) {
  const std::string ini = ini_of("values");
  const ProcessResult& r = result("print-config");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPT L=3 C=32"), std::string::npos) << "layers from the file\n" << r.output;
  EXPECT_NE(r.output.find("step     2/2"), std::string::npos) << "--steps 2 wins over steps = 9\n" << r.output;
  EXPECT_EQ(r.output.find("step     3/"), std::string::npos) << r.output;
  for (const std::string& line : std::vector<std::string>{"layers = 3 +# " + ini + ":3", "lr = 0.002 +# " + ini + ":5",
                                                          "steps = 2 +# command line \\(over " + ini + ":6\\)",
                                                          "warmup = 20 +# default", "dim = 32 +# command line"}) {
    EXPECT_TRUE(std::regex_search(r.output, std::regex(line))) << "no line matching '" << line << "' in\n" << r.output;
  }
  const ProcessResult& quiet = result("quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("# default"), std::string::npos) << "printed without --print-config\n" << quiet.output;
}

TEST_F(TrainGptConfig, BadKeysAndValuesNameFileAndLine) {
  for (std::size_t i = 0; i < kBadFiles.size(); ++i) {
    const BadFile& c = kBadFiles[i];
    const ProcessResult& r = result("bad" + std::to_string(i));
    EXPECT_NE(r.exit_code, 0) << c.text << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << "file:\n"
                                                           << c.text << "expected: " << c.message << "\n"
                                                           << r.output;
    EXPECT_EQ(r.output.find("step     1/1"), std::string::npos) << c.text << " trained anyway:\n" << r.output;
  }
}

TEST_F(TrainGptConfig, DeviceCudaWithoutAGpuIsOneLine) {
  if (device_available(DeviceChoice::kCuda)) GTEST_SKIP() << "a GPU is usable here: --device cuda would run";
  const ProcessResult& r = result("cuda");
  EXPECT_NE(r.exit_code, 0) << r.output;
  std::ifstream in(stderr_file());
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
  const ProcessResult& r = result("auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("device: cpu (auto: no usable GPU)"), std::string::npos) << r.output;
  const ProcessResult& bad = result("gpu");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--device gpu: use cpu, cuda, auto or sim-gpu"), std::string::npos) << bad.output;
}

TEST_F(TrainGptConfig, AnUnknownGemmMathIsRefusedBeforeAnythingRuns) {
  const ProcessResult& r = result("fp8");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--gemm-math"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fp8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tf32"), std::string::npos) << "the accepted values are named:\n" << r.output;
  EXPECT_EQ(r.output.find("step "), std::string::npos) << "nothing ran:\n" << r.output;
}

TEST_F(TrainGptConfig, AnUnknownCommIsRefusedBeforeAnythingRuns) {
  const ProcessResult& r = result("gloo");
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const char* word : {"--comm gloo", "auto", "nccl", "mpi"}) {
    EXPECT_NE(r.output.find(word), std::string::npos) << word << " missing from:\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step "), std::string::npos) << "nothing ran:\n" << r.output;
}

TEST_F(TrainGptConfig, TheCpuTakesEveryCommAndGemmMath) {
  // Neither setting changes a CPU run (the MPI world serves it, in f32): both are accepted there.
  const ProcessResult& r = result("cpu nccl bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("collectives:"), std::string::npos) << "a CPU run has no device world:\n" << r.output;
}

}  // namespace
}  // namespace tessera
