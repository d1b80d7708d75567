// train_gpt --device cuda, as a user runs it: the start-up line names the GPU, the GEMM math, the
// compute dtype (bf16 by default on a GPU) and the attention kernel (cuDNN's where the build has it);
// the loss falls over 30 steps; a run stopped at
// step 10 (a run of 10 steps) and resumed from its checkpoint to step 20 logs the same losses and
// gradient norms, bit for bit, as one run of 20 steps (deterministic kernels, cuDNN's backward
// included); tensor parallelism on the GPU (two ranks sharing it, their collectives staged through
// host memory; the vocabulary-sharded embedding and cross-entropy kernels) logs the losses of one
// rank within the compute dtype's round-off. Skips without a GPU.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/runtime/cuda/gpu_test_support.hpp"
#include "tests/support/train_gpt_process.hpp"
#include "tests/support/train_gpt_test.hpp"

namespace tessera {
namespace {

using testing::run_bounded;
using testing::tiny_run;

// "loss L  lr R  gnorm G" of every logged step, by step number.
std::vector<std::pair<int, std::string>> step_values(const std::string& log) {
  static const std::regex kStep(R"(step +(\d+)/\d+  (loss \S+  lr \S+  gnorm \S+)  )");
  std::vector<std::pair<int, std::string>> values;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kStep); it != std::sregex_iterator(); ++it) {
    values.emplace_back(std::stoi((*it)[1]), (*it)[2]);
  }
  return values;
}

float loss_of(const std::string& values) { return std::stof(values.substr(5)); }

class TrainGptCuda : public testing::TrainGptTest {
 protected:
  TrainGptCuda() : TrainGptTest("train_gpt_cuda", 40000, 8) {}  // 8 of the 64 ids: a loss that can fall
  void SetUp() override {
    TESSERA_REQUIRE_GPU();
    TrainGptTest::SetUp();
  }
  // Heads of 16 (dim 32, 2 heads): a head size cuDNN's fused attention takes. A constant learning
  // rate, so that a run of 10 steps and one of 20 share their first 10.
  std::string flags() const {
    return train_gpt_ + tiny_run(data_) + " --device cuda --seed 5 --warmup 0 --min-lr-ratio 1";
  }
};

TEST_F(TrainGptCuda, TrainsAndSaysWhatRunsIt) {
  const auto r = run_bounded(flags() + " --steps 30", 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("device: cuda:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GEMMs bf16 tensor cores"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compute: bf16 (--compute-dtype auto: bf16 on a GPU); params stored bf16"), std::string::npos)
      << r.output;
#if TESSERA_HAVE_CUDNN
  EXPECT_NE(r.output.find("attention: cuDNN"), std::string::npos) << r.output;
#else
  EXPECT_NE(r.output.find("attention: tiled"), std::string::npos) << r.output;
#endif
  const auto steps = step_values(r.output);
  ASSERT_EQ(steps.size(), 30u) << r.output;
  EXPECT_LT(loss_of(steps.back().second), loss_of(steps.front().second) - 0.5f) << r.output;
}

TEST_F(TrainGptCuda, ResumedRunContinuesBitIdentically) {
  const std::string straight_dir = (dir_ / "straight").string(), split_dir = (dir_ / "split").string();
  const auto straight = run_bounded(flags() + " --steps 20 --checkpoint-dir " + straight_dir, 180);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const auto first = run_bounded(flags() + " --steps 10 --save-every 10 --checkpoint-dir " + split_dir, 180);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = run_bounded(flags() + " --steps 20 --resume auto --checkpoint-dir " + split_dir, 180);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  auto expected = step_values(straight.output);
  auto resumed = step_values(first.output);
  for (const auto& step : step_values(second.output)) resumed.push_back(step);
  ASSERT_EQ(expected.size(), 20u) << straight.output;
  EXPECT_EQ(resumed, expected) << first.output << second.output;
}

TEST_F(TrainGptCuda, TensorParallelMatchesOneRank) {
  for (const std::string dtype : {"f32", "bf16"}) {
    const std::string run = flags() + " --steps 10 --micro-batch 4 --compute-dtype " + dtype;
    const auto one = run_bounded(run, 180);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto split = run_bounded("mpirun --oversubscribe -np 2 " + run + " --tp 2", 180);
    ASSERT_EQ(split.exit_code, 0) << split.output;
    EXPECT_NE(split.output.find("tensor parallel: 2 ranks per group x 1 data-parallel"), std::string::npos)
        << split.output;
    const auto a = step_values(one.output), b = step_values(split.output);
    ASSERT_EQ(a.size(), 10u) << one.output;
    ASSERT_EQ(b.size(), a.size()) << split.output;
    const float tolerance = dtype == "f32" ? 1e-3f : 3e-2f;  // TF32 / bf16 GEMMs add the pieces in another order
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(loss_of(b[i].second), loss_of(a[i].second), tolerance * loss_of(a[i].second))
          << dtype << ": step " << a[i].first;
    }
  }
}

}  // namespace
}  // namespace tessera
