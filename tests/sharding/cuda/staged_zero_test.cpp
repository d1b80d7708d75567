// ZeRO 0-3 on CUDA with the staged MPI communicator (comm/staged/), so that two ranks can share one
// GPU: every rank trains the tiny GPT on its rows of the same global batches, on its GPU (f32 GEMM
// math) and on the CPU, and the losses, gradient norms and final full parameters must agree within
// the tolerance of each setting (f32: 1e-4; bf16 parameters: 2e-2; 8-bit AdamW: 1e-3). On the GPU the
// four stages must give the same bits (the staged collectives reduce in MPI's rank order). Settings:
// f32 and bf16 parameters, AdamW and 8-bit AdamW, one and two micro-batches (accumulation),
// activation checkpointing of every block. Compiled only with CUDA; skips without a usable GPU.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/runtime/cuda/gpu_rank_test.hpp"
#include "tests/sharding/cuda/step_record.hpp"
#include "tests/sharding/sharding_test_support.hpp"

namespace tessera::testing {
namespace {

class StagedZero : public GpuRankTest {
 protected:
  void SetUp() override {
    GpuRankTest::SetUp();
    if (IsSkipped()) return;
    gpu_ = rank_gpu();
    cpu_ = make_cpu_device();
  }

  void check(const TinySetting& setting) {
    const std::string here = setting.name + ", rank " + std::to_string(world_->rank()) + "/" +
                             std::to_string(world_->size()) + " on " + gpu_->name();
    const StepRecord expected = run_tiny(*cpu_, *world_, setting, ZeroStage::kStage0);
    const StepRecord stage0 = run_tiny(*gpu_, *world_, setting, ZeroStage::kStage0);
    const StepRecord stage1 = run_tiny(*gpu_, *world_, setting, ZeroStage::kStage1);
    const StepRecord stage2 = run_tiny(*gpu_, *world_, setting, ZeroStage::kStage2);
    const StepRecord stage3 = run_tiny(*gpu_, *world_, setting, ZeroStage::kStage3);
    expect_same_bits(stage1, stage0, here + ": ZeRO 1 against ZeRO 0");
    expect_same_bits(stage3, stage2, here + ": ZeRO 3 against ZeRO 2");
    if (setting.micro_batches == 1) {
      expect_same_bits(stage2, stage0, here + ": ZeRO 2 against ZeRO 0");
    } else {
      expect_steps_close(stage2, stage0, setting.tolerance, here + ": ZeRO 2 against ZeRO 0");
    }
    expect_steps_close(stage0, expected, setting.tolerance, here);
  }

  static void expect_same_bits(const StepRecord& actual, const StepRecord& expected, const std::string& where) {
    EXPECT_EQ(actual.losses, expected.losses) << where << ": losses";
    EXPECT_EQ(actual.params, expected.params) << where << ": parameters";
  }

  std::unique_ptr<Device> gpu_, cpu_;
};

TEST_F(StagedZero, F32) { check({.name = "f32"}); }

TEST_F(StagedZero, Bf16ParametersAndReduction) {
  check({.name = "bf16 parameters and reduction",
         .precision = {.param_dtype = DType::kBF16, .reduce_dtype = DType::kBF16},
         .tolerance = 2e-2});
}

TEST_F(StagedZero, EightBitAdamW) {
  check({.name = "8-bit AdamW", .optimizer = OptimizerKind::kAdamW8bit, .tolerance = 1e-3});
}

TEST_F(StagedZero, AccumulationAndCheckpointing) {
  check({.name = "two micro-batches, every block checkpointed", .micro_batches = 2, .checkpoint_blocks = true});
}

}  // namespace
}  // namespace tessera::testing
