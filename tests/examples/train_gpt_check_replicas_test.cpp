// train_gpt --check-replicas N: a 2-rank run at --zero 0 and --zero 2 with the check every 2 steps
// completes with the same losses as the run without it (the check reads, it never changes a
// parameter); the value is refused at --zero 3 (nothing is replicated there) and below 0, naming the
// flag, before anything trains. (A run whose ranks diverge is stopped: tests/sharding/replica_check_test.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::mpirun_expecting_failure;
using testing::run_bounded;
using testing::tiny_run;

class TrainGptCheckReplicas : public testing::TrainGptTest {
 protected:
  TrainGptCheckReplicas() : TrainGptTest("train_gpt_check_replicas", 4000, 40) {}

  std::string flags(const std::string& zero) const {
    return tiny_run(data_, 40) + " --steps 4 --micro-batch 2 --allow-no-checkpoint-dir --zero " + zero;
  }
};

TEST_F(TrainGptCheckReplicas, ARunWithTheCheckOnTrainsAsOneWithout) {
  for (const std::string zero : {"0", "2"}) {
    const std::vector<std::string> plain = run_losses(2, "plain_" + zero, flags(zero));
    const std::vector<std::string> checked = run_losses(2, "checked_" + zero, flags(zero) + " --check-replicas 2");
    EXPECT_EQ(plain.size(), 4u) << "--zero " << zero;
    EXPECT_EQ(checked, plain) << "--zero " << zero;
  }
}

TEST_F(TrainGptCheckReplicas, Stage3AndNegativeValuesAreRefusedNamingTheFlag) {
  const auto at_stage3 = run_bounded(mpirun_expecting_failure(1) + train_gpt_ + flags("3") + " --check-replicas 2");
  EXPECT_NE(at_stage3.exit_code, 0) << at_stage3.output;
  EXPECT_NE(at_stage3.output.find("--check-replicas 2: applies at --zero 0, 1 and 2"), std::string::npos)
      << at_stage3.output;
  const auto negative = run_bounded(mpirun_expecting_failure(1) + train_gpt_ + flags("0") + " --check-replicas -1");
  EXPECT_NE(negative.exit_code, 0) << negative.output;
  EXPECT_NE(negative.output.find("--check-replicas -1: must be >= 0"), std::string::npos) << negative.output;
}

}  // namespace
}  // namespace tessera
