// TrainGptTest: the fixture of the tests that run train_gpt as a process. It skips where ctest did
// not say where the programs are (TESSERA_BIN_DIR); otherwise it holds the binary's path and a token
// file of `tokens` random ids below `vocab_used` in a scratch directory of its own. TrainGptSuiteFiles
// holds the same for a whole suite.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

class TrainGptTest : public ::testing::Test {
 protected:
  TrainGptTest(const std::string& name, std::int64_t tokens, std::uint64_t vocab_used)
      : dir_(name), tokens_(tokens), vocab_used_(vocab_used) {}

  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(tokens_, vocab_used_));
  }

  // Where the run called `name` writes its --metrics file.
  std::string metrics_path(const std::string& name) const { return (dir_ / (name + ".jsonl")).string(); }
  // train_gpt on `ranks` ranks (mpirun --oversubscribe) with `flags`, its metrics in metrics_path(name).
  ProcessResult launch(int ranks, const std::string& name, const std::string& flags, int seconds = 120) const {
    return run_bounded("mpirun --oversubscribe -np " + std::to_string(ranks) + " " + train_gpt_ + " " + flags +
                           " --metrics " + metrics_path(name),
                       seconds);
  }
  // The losses of that run; fails the test (naming the run, with its output) when it does not finish.
  std::vector<std::string> run_losses(int ranks, const std::string& name, const std::string& flags) const {
    const ProcessResult r = launch(ranks, name, flags);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
    return losses_of(metrics_path(name));
  }

  ScratchDir dir_;
  std::string train_gpt_;  // the binary
  std::string data_;       // the token file

 private:
  std::int64_t tokens_;
  std::uint64_t vocab_used_;
};

// What TrainGptTest holds, made once for a suite whose runs are queued when it starts (QueuedRuns):
// the binary ("" where TESSERA_BIN_DIR is not set), a scratch directory and, in it, a token file of
// `tokens` random ids below `vocab_used` (the same ids as TrainGptTest's).
struct TrainGptSuiteFiles {
  TrainGptSuiteFiles(const std::string& name, std::int64_t tokens, std::uint64_t vocab_used)
      : dir(name), train_gpt(train_gpt_binary()), data((dir / "tokens.bin").string()) {
    if (!train_gpt.empty()) write_token_file(data, random_tokens(tokens, vocab_used));
  }

  // Where the run called `name` writes its --metrics file.
  std::string metrics_path(const std::string& name) const { return (dir / (name + ".jsonl")).string(); }
  // The command line of train_gpt on `ranks` ranks (mpirun --oversubscribe) with `flags`, its metrics
  // in metrics_path(name).
  std::string launch_command(int ranks, const std::string& name, const std::string& flags) const {
    return "mpirun --oversubscribe -np " + std::to_string(ranks) + " " + train_gpt + " " + flags + " --metrics " +
           metrics_path(name);
  }

  ScratchDir dir;
  std::string train_gpt;  // the binary
  std::string data;       // the token file
};

}  // namespace tessera::testing
