// A ZeRO-3 step with NCCL on the CUDA device against the same steps with MPI on the CPU device:
// every rank trains the tiny GPT on its rows of the same global batches, once on its GPU (the engine
// on make_device_world's NCCL communicator: gathers, reduce-scatters and the staged gradient norm
// through device memory) and once on the CPU; the losses, gradient norms and the updated full
// parameters must agree within the f32 tolerance of a few steps. Compiled only with CUDA; skips, on
// every rank, when this node has fewer usable GPUs than ranks.
// tessera-test-ranks: 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/launch/rank_info.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"
#include "tests/sharding/cuda/step_record.hpp"
#include "tests/sharding/sharding_test_support.hpp"
#include "tests/support/gpu_per_rank.hpp"

namespace tessera::testing {
namespace {

constexpr int kSteps = 3;
constexpr std::int64_t kGlobal = 8;

// Collective over `host_world`; the engine runs on `device` with the communicator its memory needs.
StepRecord zero3_steps(Device& device, Communicator& host_world, MixedPrecision precision) {
  const std::unique_ptr<Communicator> device_world = make_device_world(device, host_world, CommOptions{});
  Communicator& world = device_world ? *device_world : host_world;
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = ZeroStage::kStage3;
  config.precision = precision;
  config.optimizer.adamw = test_adamw();
  config.grad_clip = kClip;
  ShardedEngine engine(model, device, world, config, kSeed);
  EXPECT_EQ(engine.shard_group().memory_space(), device.memory_space()) << device.name();
  const std::int64_t micro = kGlobal / world.size();
  return record_steps(
      engine, model, kSteps,
      [&](int s) { return std::vector<MicroBatch>{global_rows(device, tiny_gpt(), s, world.rank() * micro, micro)}; },
      kLr);
}

class NcclZero3 : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    info_ = discover_rank_info(*world_, read_launcher_env(process_environment()));
    if (const std::string why = testing::why_not_one_gpu_per_rank(info_); !why.empty()) GTEST_SKIP() << why;
  }

  void compare(MixedPrecision precision, double tolerance, const std::string& what) {
    auto cpu = make_cpu_device();
    auto gpu = make_rank_device(DeviceChoice::kCuda, info_);
    const StepRecord expected = zero3_steps(*cpu, *world_, precision);
    const StepRecord actual = zero3_steps(*gpu, *world_, precision);
    const std::string where = what + " on " + gpu->name() + ", rank " + std::to_string(info_.rank);
    expect_steps_close(actual, expected, tolerance, where);
  }

  std::unique_ptr<MpiCommunicator> world_;
  RankInfo info_;
};

TEST_F(NcclZero3, F32StepsMatchTheMpiCpuRun) { compare(MixedPrecision{}, 1e-4, "ZeRO-3 f32"); }

TEST_F(NcclZero3, Bf16ReduceStepsMatchTheMpiCpuRun) {
  MixedPrecision bf16_reduce;
  bf16_reduce.reduce_dtype = DType::kBF16;
  // NCCL sums bf16 in its own order and precision (the MPI backend widens to f32): a looser bound.
  compare(bf16_reduce, 1e-2, "ZeRO-3 with bf16 gradient reduction");
}

}  // namespace
}  // namespace tessera::testing
