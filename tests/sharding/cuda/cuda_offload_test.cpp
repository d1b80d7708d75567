// Optimizer (and ZeRO-3 parameter) offload from the GPU: the host updates the state through pinned
// copies of the gradients and parameters. Against the same run with everything on the GPU: the
// losses, gradient norms and final parameters agree within the setting's tolerance (the update runs
// the CPU AdamW kernels instead of the CUDA ones; f32: 1e-4, bf16 parameters: 2e-2, 8-bit: 1e-3), at
// ZeRO 1-3 with CPU and NVMe offload, on 1 and 2 ranks (collectives staged through MPI, so ranks may
// share a GPU). Compiled only with CUDA; skips without a usable GPU.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <utility>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tests/runtime/cuda/gpu_rank_test.hpp"
#include "tests/sharding/cuda/step_record.hpp"
#include "tests/sharding/sharding_test_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing {
namespace {

class CudaOffload : public GpuRankTest {
 protected:
  void SetUp() override {
    GpuRankTest::SetUp();
    if (IsSkipped()) return;
    gpu_ = rank_gpu();
  }

  StepRecord run(const TinySetting& setting, ZeroStage stage, OffloadConfig offload) {
    return run_tiny(*gpu_, *world_, setting, stage, std::move(offload));
  }

  void check(const TinySetting& setting) {
    ScratchDir dir("cuda_offload");
    const std::string here = setting.name + ", rank " + std::to_string(world_->rank()) + "/" +
                             std::to_string(world_->size()) + " on " + gpu_->name();
    for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
      const std::string at = here + ", ZeRO-" + std::to_string(zero_stage_number(stage));
      const StepRecord on_device = run(setting, stage, {});
      OffloadConfig cpu;
      cpu.optimizer = OffloadTarget::kCpu;
      if (stage == ZeroStage::kStage3) cpu.parameters = OffloadTarget::kCpu;
      expect_steps_close(run(setting, stage, cpu), on_device, setting.tolerance, at + ", cpu offload");
      OffloadConfig nvme;
      nvme.optimizer = OffloadTarget::kNvme;
      if (stage == ZeroStage::kStage3) nvme.parameters = OffloadTarget::kNvme;
      nvme.nvme.path = dir.path().string();
      nvme.nvme.block_elements = 4096;
      expect_steps_close(run(setting, stage, nvme), on_device, setting.tolerance, at + ", nvme offload");
    }
  }

  std::unique_ptr<Device> gpu_;
};

TEST_F(CudaOffload, F32) { check({.name = "f32"}); }

TEST_F(CudaOffload, Bf16Parameters) {
  check({.name = "bf16 parameters and reduction",
         .precision = {.param_dtype = DType::kBF16, .reduce_dtype = DType::kBF16},
         .tolerance = 2e-2});
}

TEST_F(CudaOffload, EightBitAdamW) {
  check({.name = "8-bit AdamW", .optimizer = OptimizerKind::kAdamW8bit, .tolerance = 1e-3});
}

}  // namespace
}  // namespace tessera::testing
