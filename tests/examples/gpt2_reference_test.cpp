// Tessera's logits against an independent GPT-2: train_gpt trains a tiny model a few steps and
// saves it, tessera_ckpt exports it as safetensors, tessera_eval prints the logits of a token
// sequence from the checkpoint and from the export, and scripts/gpt2_reference.py (NumPy, float64,
// its own safetensors parser) computes them from the export: the largest difference must be below
// 1e-4, and a logit moved by 1e-2 must be caught. Skips when python3 with numpy is not installed
// (scripts/setup installs python3-numpy).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/support/concurrent_runs.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using CommandResult = testing::ProcessResult;

namespace fs = std::filesystem;

// Every command runs under a time bound: a hung program fails the test instead of hanging it.
CommandResult run_command(const std::string& command) { return testing::run_bounded(command, 240); }

// A python3 that imports numpy: the one on PATH, else the system's; "" when neither does (both are
// asked at once).
std::string python_with_numpy() {
  const std::vector<std::string> pythons = {"python3", "/usr/bin/python3"};
  const std::vector<CommandResult> imported =
      testing::run_concurrently({pythons[0] + " -c 'import numpy'", pythons[1] + " -c 'import numpy'"}, 240);
  for (std::size_t i = 0; i < pythons.size(); ++i) {
    if (imported[i].exit_code == 0) return pythons[i];
  }
  return "";
}

class Gpt2Reference : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    const char* source = std::getenv("TESSERA_SOURCE_DIR");
    if (bin == nullptr || source == nullptr)
      GTEST_SKIP() << "TESSERA_BIN_DIR / TESSERA_SOURCE_DIR not set (ctest sets them)";
    python_ = python_with_numpy();
    if (python_.empty()) GTEST_SKIP() << "no python3 with numpy (install python3-numpy, as scripts/setup does)";
    bin_ = bin;
    script_ = std::string(source) + "/scripts/gpt2_reference.py";
    dir_ = fs::temp_directory_path() / ("gpt2_reference_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "export");
    std::vector<std::int32_t> tokens(12000);
    Rng rng(5);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(257));
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, tokens);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The command line of the reference's verdict on `logits` (tessera_eval's JSON): exit 0 when within 1e-4.
  std::string compare_command(const fs::path& logits) const {
    return python_ + " " + script_ + " " + (dir_ / "export" / "model.safetensors").string() + " --compare " +
           logits.string() + " --tolerance 1e-4";
  }

  std::string python_, bin_, script_, data_;
  fs::path dir_;
};

TEST_F(Gpt2Reference, LogitsMatchANumpyGpt2OnTheSafetensorsExport) {
  const std::string run = (dir_ / "run").string();
  const CommandResult train =
      run_command(bin_ + "/train_gpt --data " + data_ +
                  " --tokenizer bytes --layers 2 --dim 32 --heads 2 --seq-len 16 --micro-batch 4 --steps 6 "
                  "--lr 3e-3 --warmup 0 --sample-tokens 0 --eval-every 0 --log-every 6 "
                  "--threads 1 --checkpoint-dir " +
                  run + " --save-every 6");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string st = (dir_ / "export" / "model.safetensors").string();
  const CommandResult exported = run_command(bin_ + "/tessera_ckpt export " + run + " " + st + " --format safetensors");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("vocabulary 257"), std::string::npos) << exported.output;
  const std::string tokens = "84,104,101,32,256,0,255,10,200,7,99,98,97,96,95,94";  // a full context of 16
  // The logits from the checkpoint and from the export, at once (each into its own file).
  const std::vector<std::string> models = {run, st};
  std::vector<fs::path> logits_files;
  std::vector<std::string> evals;
  for (std::size_t m = 0; m < models.size(); ++m) {
    logits_files.push_back(dir_ / ("logits" + std::to_string(m) + ".json"));
    evals.push_back("sh -c '" + bin_ + "/tessera_eval " + models[m] + " --tokens " + tokens + " --print-logits > " +
                    logits_files[m].string() + "'");  // stderr to the pipe
  }
  const std::vector<CommandResult> evaluated = testing::run_concurrently(evals, 240);
  for (std::size_t m = 0; m < models.size(); ++m) {
    const std::string& model = models[m];
    const fs::path& logits = logits_files[m];
    const CommandResult& eval = evaluated[m];
    ASSERT_EQ(eval.exit_code, 0) << eval.output;
    // The reference on the logits, and on them with one logit moved by 1e-2 (which it must catch), at once.
    std::ifstream in(logits);
    nlohmann::json json = nlohmann::json::parse(in);
    ASSERT_EQ(json["logits"].size(), 16u);
    ASSERT_EQ(json["logits"][0].size(), 257u) << "one logit per real token";
    json["logits"][3][100] = json["logits"][3][100].get<double>() + 1e-2;
    const fs::path moved = dir_ / ("moved" + std::to_string(m) + ".json");
    std::ofstream(moved) << json.dump();
    const std::vector<CommandResult> verdicts =
        testing::run_concurrently({compare_command(logits), compare_command(moved)}, 240);
    const CommandResult& verdict = verdicts[0];
    EXPECT_EQ(verdict.exit_code, 0) << model << ": " << verdict.output;
    EXPECT_NE(verdict.output.find("max abs diff"), std::string::npos) << verdict.output;
    std::printf("%s: %s", model.c_str(), verdict.output.c_str());
    EXPECT_EQ(verdicts[1].exit_code, 1) << "a logit moved by 1e-2 passed";
  }
}

}  // namespace
}  // namespace tessera
