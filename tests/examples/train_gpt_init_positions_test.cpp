// train_gpt --init-from a model made for more positions than the run's context: the whole position
// table is kept (the model line shows the export's T) and training runs at the shorter --seq-len;
// a context longer than the export's table is refused, naming max_seq_len.
// tessera-test-timeout: 120
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/concurrent_runs.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::ProcessResult;
using testing::run_bounded;
using testing::set_flag;
using testing::tiny_run;

class InitPositions : public testing::TrainGptTest {
 protected:
  InitPositions() : TrainGptTest("init_positions", 20000, 60) {}
};

TEST_F(InitPositions, ALongerPositionTableIsKept) {
  const std::string bin_dir = std::filesystem::path(train_gpt_).parent_path().string();
  const std::string run = (dir_ / "run").string(), model = (dir_ / "model.safetensors").string();
  const std::string flags = set_flag(tiny_run(data_), "--seq-len", "32");
  const ProcessResult trained = run_bounded(train_gpt_ + flags + " --steps 2 --checkpoint-dir " + run, 60);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const ProcessResult exported =
      run_bounded(bin_dir + "/tessera_ckpt export " + run + " " + model + " --format safetensors --vocab 64", 60);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;

  // The shorter and the longer context from the export, at once (both only read it).
  const std::vector<ProcessResult> runs =
      testing::run_concurrently({train_gpt_ + set_flag(flags, "--seq-len", "16") + " --steps 2 --init-from " + model,
                                 train_gpt_ + set_flag(flags, "--seq-len", "64") + " --steps 2 --init-from " + model},
                                60);
  const ProcessResult& tuned = runs[0];
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("T=32, "), std::string::npos) << "the export's 32 positions:\n" << tuned.output;
  EXPECT_NE(tuned.output.find("at seq_len 16"), std::string::npos) << tuned.output;
  EXPECT_NE(tuned.output.find("step     2/2"), std::string::npos) << tuned.output;

  const ProcessResult& longer = runs[1];
  EXPECT_NE(longer.exit_code, 0) << longer.output;
  EXPECT_NE(longer.output.find("max_seq_len = 32, this run has max_seq_len = 64"), std::string::npos) << longer.output;
}

}  // namespace
}  // namespace tessera
