// train_gpt with the optimizer (and at ZeRO-3 the parameters) offloaded from a discrete device, run on
// the simulated GPU (device memory the host cannot touch, an asynchronous copy engine): the host
// updates the offloaded state through pinned copies, and the losses are those of the run that keeps
// everything on the device, bit for bit — at ZeRO 1-3, on 1 and 2 ranks, with f32 and bf16
// parameters, 8-bit AdamW, gradient accumulation and NVMe; a checkpoint saved offloaded on 2 ranks
// resumes on 1 rank without offload at another stage and continues the uninterrupted run; parameter
// offload without the optimizer's is refused on the GPU, saying what to set.
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::losses_of;
using testing::ProcessResult;

class TrainGpuOffload : public testing::TrainGptTest {
 protected:
  TrainGpuOffload() : TrainGptTest("train_gpu_offload", 40000, 60) {}

  std::string flags() const {
    return " --data " + data_ +
           " --device sim-gpu --layers 2 --dim 32 --heads 4 --seq-len 16 --vocab 64 --global-batch 4"
           " --micro-batch 2 --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1 --no-memory-check";
  }

  std::vector<std::string> run(int ranks, const std::string& name, const std::string& extra) {
    return run_losses(ranks, name, flags() + " " + extra);
  }
};

TEST_F(TrainGpuOffload, OffloadedRunsMatchTheDeviceRunBitForBit) {
  const std::string nvme = (dir_ / "nvme").string();
  std::filesystem::create_directories(nvme);
  for (int ranks : {1, 2}) {
    const std::string r = std::to_string(ranks);
    const std::vector<std::string> device = run(ranks, "device" + r, "--steps 4 --zero 1");
    ASSERT_EQ(device.size(), 4u);
    EXPECT_EQ(run(ranks, "z1cpu" + r, "--steps 4 --zero 1 --offload-optimizer cpu"), device) << ranks << " ranks";
    EXPECT_EQ(run(ranks, "z2cpu" + r, "--steps 4 --zero 2 --offload-optimizer cpu"), device) << ranks << " ranks";
    EXPECT_EQ(run(ranks, "z3cpu" + r, "--steps 4 --zero 3 --offload-optimizer cpu --offload-params cpu"), device)
        << ranks << " ranks";
    EXPECT_EQ(run(ranks, "z3nvme" + r,
                  "--steps 4 --zero 3 --offload-optimizer nvme --offload-params nvme --offload-path " + nvme),
              device)
        << ranks << " ranks";
  }
  // bf16 parameters, 8-bit AdamW: against the device run of the same settings.
  const std::vector<std::string> bf16 = run(2, "bf16", "--steps 3 --zero 2 --param-dtype bf16");
  EXPECT_EQ(run(2, "bf16cpu", "--steps 3 --zero 2 --param-dtype bf16 --offload-optimizer cpu"), bf16);
  EXPECT_EQ(run(2, "bf16z3", "--steps 3 --zero 3 --param-dtype bf16 --offload-optimizer cpu --offload-params cpu"),
            bf16);
  const std::vector<std::string> eight = run(2, "8bit", "--steps 3 --zero 1 --optimizer adamw8bit");
  EXPECT_EQ(run(2, "8bitcpu", "--steps 3 --zero 1 --optimizer adamw8bit --offload-optimizer cpu"), eight);
}

TEST_F(TrainGpuOffload, ResumesWithoutOffloadOnAnotherRankCountBitForBit) {
  const std::vector<std::string> straight = run(2, "straight", "--steps 6 --zero 2");
  ASSERT_EQ(straight.size(), 6u);
  const std::string ckpt = (dir_ / "ckpt").string();
  const std::vector<std::string> first =
      run(2, "first",
          "--steps 3 --zero 3 --offload-optimizer cpu --offload-params cpu --save-every 3 --checkpoint-dir " + ckpt);
  ASSERT_EQ(first, std::vector<std::string>(straight.begin(), straight.begin() + 3));
  const ProcessResult resumed =
      launch(1, "resumed", flags() + " --steps 6 --zero 1 --checkpoint-dir " + ckpt + " --resume auto");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 3"), std::string::npos) << resumed.output;
  const std::vector<std::string> after = losses_of(metrics_path("resumed"));
  ASSERT_GE(after.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(after.end() - 3, after.end()),
            std::vector<std::string>(straight.begin() + 3, straight.end()));
}

TEST_F(TrainGpuOffload, ParameterOffloadWithoutTheOptimizersIsRefused) {
  const ProcessResult r = launch(1, "refused", flags() + " --steps 1 --zero 3 --offload-params cpu");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("needs the optimizer offloaded too"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
