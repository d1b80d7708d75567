// Ranks launched with different settings (an MPMD mpirun line, one config file per rank) refuse
// to train, every rank with the same message naming each differing setting as its flag and every
// rank's value; settings that differ only in where they came from (command line vs config file)
// are the same setting.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::run_bounded;
using testing::tiny_run;

class SettingsMismatch : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = testing::train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    data_ = (dir_ / "tokens.bin").string();
    write_token_file(data_, random_tokens(5000, 40));
  }

  // One process per entry of `per_rank` (extra flags), in one MPMD job.
  testing::ProcessResult run_mpmd(const std::vector<std::string>& per_rank) {
    std::string line = "mpirun --oversubscribe";
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      line += (r ? " :" : "") + std::string(" -np 1 ") + train_gpt_ + tiny_run(data_) + " --steps 2 " + per_rank[r];
    }
    return run_bounded(line, 90);
  }

  testing::ScratchDir dir_{"settings_mismatch"};
  std::string train_gpt_, data_;
};

TEST_F(SettingsMismatch, DifferentLearningRateSeedAndWeightDecayAreRefused) {
  const auto r = run_mpmd({"--lr 0.001 --seed 1", "--lr 0.002 --seed 1", "--lr 0.001 --seed 7 --weight-decay 0.5"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("step     1/2"), std::string::npos) << "it trained:\n" << r.output;
  for (const std::string part :
       {"settings differ across ranks", "--lr: ranks 0, 2: '0.001'; rank 1: '0.002'", "--seed: ranks 0, 1: '1'; rank 2: '7'",
        "--weight-decay: ranks 0, 1: '0.1'; rank 2: '0.5'"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << "no \"" << part << "\" in:\n" << r.output;
  }
}

TEST_F(SettingsMismatch, TheSameValueFromAConfigFileAgrees) {
  const std::string config = (dir_ / "rank1.ini").string();
  std::ofstream(config) << "lr = 0.002\n";
  const auto r = run_mpmd({"--lr 0.002", "--config " + config});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step     2/2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
