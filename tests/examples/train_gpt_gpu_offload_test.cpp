// train_gpt with the optimizer (and at ZeRO-3 the parameters) offloaded from a discrete device, run on
// the simulated GPU (device memory the host cannot touch, an asynchronous copy engine): the host
// updates the offloaded state through pinned copies, and the losses are those of the run that keeps
// everything on the device, bit for bit — at ZeRO 1-3, on 1 and 2 ranks, with f32 and bf16
// parameters, 8-bit AdamW, gradient accumulation and NVMe; a checkpoint saved offloaded on 2 ranks
// resumes on 1 rank without offload at another stage and continues the uninterrupted run; parameter
// offload without the optimizer's is refused on the GPU, saying what to set. The tests' runs are
// queued together when the suite starts; each test checks its own.
// tessera-test-timeout: 240
// tessera-test-cost: 8
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/queued_runs.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::ProcessResult;

// The tests' runs are independent but for a resume after the run that saved (queued as one task):
// they are queued together when the suite starts (QueuedRuns) and each test checks its own.
class TrainGpuOffload : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = std::make_unique<testing::TrainGptSuiteFiles>("train_gpu_offload", 40000, 60);
    if (files_->train_gpt.empty()) return;
    runs_ = std::make_unique<testing::QueuedRuns>();
    // OffloadedRunsMatchTheDeviceRunBitForBit: each run its own metrics file and NVMe directory.
    for (int ranks : {1, 2}) {
      const std::string r = std::to_string(ranks);
      const std::string nvme = (files_->dir / ("nvme" + r)).string();
      std::filesystem::create_directories(nvme);
      queue_run(ranks, "device" + r, "--steps 4 --zero 1");
      queue_run(ranks, "z1cpu" + r, "--steps 4 --zero 1 --offload-optimizer cpu");
      queue_run(ranks, "z2cpu" + r, "--steps 4 --zero 2 --offload-optimizer cpu");
      queue_run(ranks, "z3cpu" + r, "--steps 4 --zero 3 --offload-optimizer cpu --offload-params cpu");
      queue_run(ranks, "z3nvme" + r,
                "--steps 4 --zero 3 --offload-optimizer nvme --offload-params nvme --offload-path " + nvme);
    }
    // bf16 parameters, 8-bit AdamW: against the device run of the same settings.
    queue_run(2, "bf16", "--steps 3 --zero 2 --param-dtype bf16");
    queue_run(2, "bf16cpu", "--steps 3 --zero 2 --param-dtype bf16 --offload-optimizer cpu");
    queue_run(2, "bf16z3", "--steps 3 --zero 3 --param-dtype bf16 --offload-optimizer cpu --offload-params cpu");
    queue_run(2, "8bit", "--steps 3 --zero 1 --optimizer adamw8bit");
    queue_run(2, "8bitcpu", "--steps 3 --zero 1 --optimizer adamw8bit --offload-optimizer cpu");
    // ResumesWithoutOffloadOnAnotherRankCountBitForBit: the uninterrupted run; the first part,
    // offloaded and saved at step 3, then the rest on 1 rank without offload.
    queue_run(2, "straight", "--steps 6 --zero 2");
    const std::string ckpt = (files_->dir / "ckpt").string();
    runs_->queue("first, resumed", [ckpt] {
      std::vector<ProcessResult> results{testing::run_bounded(files_->launch_command(
          2, "first",
          flags() +
              " --steps 3 --zero 3 --offload-optimizer cpu --offload-params cpu --save-every 3 --checkpoint-dir " +
              ckpt))};
      if (results[0].exit_code == 0) {
        results.push_back(testing::run_bounded(files_->launch_command(
            1, "resumed", flags() + " --steps 6 --zero 1 --checkpoint-dir " + ckpt + " --resume auto")));
      }
      return results;
    });
    // ParameterOffloadWithoutTheOptimizersIsRefused
    runs_->queue("refused", testing::mpirun_expecting_failure(1) + files_->train_gpt + flags() +
                                " --steps 1 --zero 3 --offload-params cpu");
  }
  static void TearDownTestSuite() {
    runs_.reset();  // before the files it runs on
    files_.reset();
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  }

  static std::string flags() {
    return " --data " + files_->data +
           " --device sim-gpu --layers 2 --dim 32 --heads 4 --seq-len 16 --vocab 64 --global-batch 4"
           " --micro-batch 2 --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --no-memory-check";
  }
  // Queues train_gpt on `ranks` ranks with flags() and `extra`, its metrics in metrics_path(name).
  static void queue_run(int ranks, const std::string& name, const std::string& extra) {
    runs_->queue(name, files_->launch_command(ranks, name, flags() + " " + extra));
  }
  // The losses of the run queued as `name`; fails the test (naming it, with its output) when it
  // did not finish.
  static std::vector<std::string> losses(const std::string& name) {
    const ProcessResult& r = runs_->result(name);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
    return losses_of(files_->metrics_path(name));
  }

  static inline std::unique_ptr<testing::TrainGptSuiteFiles> files_;
  static inline std::unique_ptr<testing::QueuedRuns> runs_;
};

TEST_F(TrainGpuOffload, OffloadedRunsMatchTheDeviceRunBitForBit) {
  for (int ranks : {1, 2}) {
    const std::string r = std::to_string(ranks);
    const std::vector<std::string> device = losses("device" + r);
    ASSERT_EQ(device.size(), 4u);
    for (const char* offloaded : {"z1cpu", "z2cpu", "z3cpu", "z3nvme"}) {
      EXPECT_EQ(losses(offloaded + r), device) << offloaded << ", " << ranks << " ranks";
    }
  }
  EXPECT_EQ(losses("bf16cpu"), losses("bf16"));
  EXPECT_EQ(losses("bf16z3"), losses("bf16"));
  EXPECT_EQ(losses("8bitcpu"), losses("8bit"));
}

TEST_F(TrainGpuOffload, ResumesWithoutOffloadOnAnotherRankCountBitForBit) {
  const std::vector<std::string> straight = losses("straight");
  ASSERT_EQ(straight.size(), 6u);
  const std::vector<ProcessResult>& runs = runs_->results("first, resumed");
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  ASSERT_EQ(losses_of(files_->metrics_path("first")), std::vector<std::string>(straight.begin(), straight.begin() + 3));
  const ProcessResult& resumed = runs.at(1);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 3"), std::string::npos) << resumed.output;
  const std::vector<std::string> after = losses_of(files_->metrics_path("resumed"));
  ASSERT_GE(after.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(after.end() - 3, after.end()),
            std::vector<std::string>(straight.begin() + 3, straight.end()));
}

TEST_F(TrainGpuOffload, ParameterOffloadWithoutTheOptimizersIsRefused) {
  const ProcessResult& r = runs_->result("refused");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("needs the optimizer offloaded too"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
