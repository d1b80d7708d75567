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
#include <stdexcept>
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
};

TEST_F(TrainGpuOffload, OffloadedRunsMatchTheDeviceRunBitForBit) {
  // The runs are independent (each its own metrics file and NVMe directory): they run at once.
  std::vector<Launch> runs;
  for (int ranks : {1, 2}) {
    const std::string r = std::to_string(ranks);
    const std::string nvme = (dir_ / ("nvme" + r)).string();
    std::filesystem::create_directories(nvme);
    runs.push_back({ranks, "device" + r, flags() + " --steps 4 --zero 1"});
    runs.push_back({ranks, "z1cpu" + r, flags() + " --steps 4 --zero 1 --offload-optimizer cpu"});
    runs.push_back({ranks, "z2cpu" + r, flags() + " --steps 4 --zero 2 --offload-optimizer cpu"});
    runs.push_back({ranks, "z3cpu" + r, flags() + " --steps 4 --zero 3 --offload-optimizer cpu --offload-params cpu"});
    runs.push_back({ranks, "z3nvme" + r,
                    flags() + " --steps 4 --zero 3 --offload-optimizer nvme --offload-params nvme --offload-path " +
                        nvme});
  }
  // bf16 parameters, 8-bit AdamW: against the device run of the same settings.
  runs.push_back({2, "bf16", flags() + " --steps 3 --zero 2 --param-dtype bf16"});
  runs.push_back({2, "bf16cpu", flags() + " --steps 3 --zero 2 --param-dtype bf16 --offload-optimizer cpu"});
  runs.push_back({2, "bf16z3",
                  flags() + " --steps 3 --zero 3 --param-dtype bf16 --offload-optimizer cpu --offload-params cpu"});
  runs.push_back({2, "8bit", flags() + " --steps 3 --zero 1 --optimizer adamw8bit"});
  runs.push_back({2, "8bitcpu", flags() + " --steps 3 --zero 1 --optimizer adamw8bit --offload-optimizer cpu"});
  const std::vector<std::vector<std::string>> losses = run_losses_concurrently(runs);
  const auto of = [&](const std::string& name) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].name == name) return losses[i];
    }
    throw std::invalid_argument("no run named " + name);
  };

  for (int ranks : {1, 2}) {
    const std::string r = std::to_string(ranks);
    const std::vector<std::string> device = of("device" + r);
    ASSERT_EQ(device.size(), 4u);
    for (const char* offloaded : {"z1cpu", "z2cpu", "z3cpu", "z3nvme"}) {
      EXPECT_EQ(of(offloaded + r), device) << offloaded << ", " << ranks << " ranks";
    }
  }
  EXPECT_EQ(of("bf16cpu"), of("bf16"));
  EXPECT_EQ(of("bf16z3"), of("bf16"));
  EXPECT_EQ(of("8bitcpu"), of("8bit"));
}

TEST_F(TrainGpuOffload, ResumesWithoutOffloadOnAnotherRankCountBitForBit) {
  // The uninterrupted run and the first part (saved at step 3) at once; then the resumed part.
  const std::string ckpt = (dir_ / "ckpt").string();
  const std::vector<std::vector<std::string>> losses = run_losses_concurrently(
      {{2, "straight", flags() + " --steps 6 --zero 2"},
       {2, "first",
        flags() +
            " --steps 3 --zero 3 --offload-optimizer cpu --offload-params cpu --save-every 3 --checkpoint-dir " + ckpt}});
  const std::vector<std::string>& straight = losses[0];
  ASSERT_EQ(straight.size(), 6u);
  ASSERT_EQ(losses[1], std::vector<std::string>(straight.begin(), straight.begin() + 3));
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
  const ProcessResult r = testing::run_bounded(testing::mpirun_expecting_failure(1) + train_gpt_ + flags() +
                                              " --steps 1 --zero 3 --offload-params cpu");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("needs the optimizer offloaded too"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tessera
