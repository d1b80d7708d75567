// A node lost in the middle of a two-node run (tests/support/node_cluster.hpp, 2 ranks per node,
// ZeRO-3, a checkpoint every few steps): every process of node n2 killed at once, or n2's link
// taken down while the ranks are in their collectives. Either way the job must end on its own --
// well within the watchdog's timeout -- with a message that names n2 (the start-up line names its
// ranks), leave the checkpoint `latest` points at whole, and the surviving node must resume from
// it on its own.
// tessera-test-timeout: 300
// tessera-test-cost: 8
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "tests/support/node_cluster.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::NodeCluster;
using testing::ProcessResult;
using testing::random_tokens;
using testing::ScratchDir;
using testing::train_gpt_binary;
using Clock = std::chrono::steady_clock;

constexpr int kWatchdogSeconds = 30;  // TESSERA_COLLECTIVE_TIMEOUT of the runs

class NodeLoss : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    if (const std::string why = cluster_.start(2); !why.empty()) GTEST_SKIP() << "no simulated nodes here: " << why;
    write_token_file((dir_ / "tokens.bin").string(), random_tokens(40000, 60));
  }

  std::string flags(const std::string& more) const {
    return train_gpt_ +
           " --data tokens.bin --layers 2 --dim 32 --heads 2 --seq-len 16 --micro-batch 4 --vocab 64 --sample-tokens 0 "
           "--eval-every 0 --log-every 50 --threads 1 --no-memory-check --progress plain --zero 3 --checkpoint-dir " +
           run_dir_.string() + " " + more;
  }

  // Starts a long two-node run, waits until it has saved a checkpoint and gone on training, does
  // `lose_node`, and returns the run's result and the seconds from the loss to the job's end.
  std::pair<ProcessResult, double> lose_node_mid_run(const std::function<void()>& lose_node) {
    const std::string line =
        cluster_.mpirun("n1:2,n2:2", 4,
                        "--map-by slot -x TESSERA_COLLECTIVE_TIMEOUT=" + std::to_string(kWatchdogSeconds)) +
        flags("--steps 1000000 --save-every 10 --keep-last 2");
    std::future<ProcessResult> run =
        std::async(std::launch::async, [&] { return cluster_.launch(dir_.path().string(), line, 200); });
    const auto give_up = Clock::now() + std::chrono::seconds(90);
    while (!std::filesystem::exists(run_dir_ / "latest") && Clock::now() < give_up &&
           run.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the steps after the save
    const auto lost = Clock::now();
    lose_node();
    ProcessResult result = run.get();
    return {result, std::chrono::duration<double>(Clock::now() - lost).count()};
  }

  // The start-up line names n2's ranks, and the job's end names n2 (Open MPI's launcher: "Remote
  // daemon ... on node n2" when it lost the node, or the peer host a rank lost).
  static void expect_end_names_n2(const std::string& output) {
    const std::string start = "nodes: 2; n1: ranks 0, 1; n2: ranks 2, 3";
    const std::size_t at = output.find(start);
    ASSERT_NE(at, std::string::npos) << output;
    EXPECT_NE(output.find("n2", at + start.size()), std::string::npos) << "the end names n2:\n" << output;
  }

  // The surviving node alone resumes from `latest`.
  void survivors_resume() {
    const ProcessResult verify = testing::run_bounded(
        std::string(std::getenv("TESSERA_BIN_DIR")) + "/tessera_ckpt verify " + run_dir_.string(), 60);
    EXPECT_EQ(verify.exit_code, 0) << "the latest checkpoint is whole:\n" << verify.output;
    const std::string latest = std::filesystem::read_symlink(run_dir_ / "latest").filename().string();
    const int step = std::stoi(latest.substr(latest.find('_') + 1));
    const ProcessResult resumed = cluster_.launch(
        dir_.path().string(),
        cluster_.mpirun("n1:2", 2) + flags("--steps " + std::to_string(step + 3) + " --resume auto"), 120);
    EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from " + (run_dir_ / latest).string() + " at step " + std::to_string(step)),
              std::string::npos)
        << resumed.output;
  }

  ScratchDir dir_{"node_loss"};
  NodeCluster cluster_{dir_ / "cluster"};  // after dir_: taken down before the directory goes
  std::string train_gpt_;
  std::filesystem::path run_dir_ = dir_ / "run";
};

TEST_F(NodeLoss, NodeKilledMidRunEndsTheJobAndItsNeighbourResumes) {
  const auto [run, seconds] = lose_node_mid_run([&] { cluster_.kill_node("n2"); });
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_LT(seconds, kWatchdogSeconds) << run.output;
  expect_end_names_n2(run.output);
  survivors_resume();
}

TEST_F(NodeLoss, LinkDownMidCollectiveEndsTheJobAndItsNeighbourResumes) {
  const auto [run, seconds] = lose_node_mid_run([&] { cluster_.set_link("n2", false); });
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_LT(seconds, kWatchdogSeconds) << run.output;
  expect_end_names_n2(run.output);
  cluster_.kill_node("n2");  // what a lost link leaves behind there
  survivors_resume();
}

}  // namespace
}  // namespace tessera
