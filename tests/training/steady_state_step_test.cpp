// A training step in the steady state allocates no new memory from the system and zero-fills only
// gradient accumulators: after warm-up steps the CPU device's caching allocator serves every
// request, and the bytes zero-filled per step are exactly the gradient buffers that accumulate
// (the persistent full buffers at ZeRO 0-1; the shards plus the transient full buffers at 2-3) —
// gather targets and conversion outputs are written before they are read and not zeroed. Checked
// for the Trainer over the ShardedEngine at every stage (f32 and bf16 reduce) and for LocalTrainer.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/timed_device.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/sharding/sharding_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr int kWarmup = 2;

// The CPU device under a TimedDevice (which counts the fills).
const BlockCache& cache_of(TimedDevice& device) { return dynamic_cast<CpuDevice&>(device.inner()).block_cache(); }

void check_steady_state(ZeroStage stage, DType reduce, Communicator& world) {
  TimedDevice device(make_cpu_device());
  Gpt model(tiny_gpt());
  ShardingConfig config;
  config.stage = stage;
  config.precision.reduce_dtype = reduce;
  ShardedEngine engine(model, device, world, config, kSeed);
  Trainer trainer(engine);
  const MicroBatch batch = global_rows(device, tiny_gpt(), 0, 2 * world.rank(), 2);
  for (int s = 0; s < kWarmup; ++s) trainer.train_step({batch}, kLr);
  const std::int64_t allocations = cache_of(device).system_allocations();
  device.reset_times();
  trainer.train_step({batch}, kLr);
  const std::string where =
      config.to_string() + ", rank " + std::to_string(world.rank()) + " of " + std::to_string(world.size());
  EXPECT_EQ(cache_of(device).system_allocations(), allocations)
      << where << ": blocks allocated from the system in a steady-state step";
  std::int64_t expected_fill = 0;
  for (const auto& unit : engine.units()) {
    const std::int64_t full = 4 * unit->layout().padded_numel(), shard = 4 * unit->layout().shard_numel();
    expected_fill += engine.placement().transient_full_grads ? shard + full : full;
  }
  EXPECT_EQ(device.memory_op_times().bytes_of(MemoryOp::kFill), expected_fill)
      << where << ": bytes zero-filled in one step (expected: the gradient accumulators only)";
}

TEST(SteadyStateStep, TrainerAtEveryStageAllocatesNothingNewAndZeroesOnlyGradients) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (int st = 0; st <= 3; ++st) {
    check_steady_state(parse_zero_stage(st), DType::kF32, world);
    check_steady_state(parse_zero_stage(st), DType::kBF16, world);
  }
}

TEST(SteadyStateStep, LocalTrainerAllocatesNothingNewAndZeroesOnlyGradients) {
  TimedDevice device(make_cpu_device());
  Gpt model(tiny_gpt());
  materialize_parameters(model, device, kSeed);
  LocalTrainer trainer(model, device, test_adamw(), kClip);
  const std::vector<MicroBatch> batch{global_rows(device, tiny_gpt(), 0, 0, 2),
                                      global_rows(device, tiny_gpt(), 1, 0, 2)};
  for (int s = 0; s < kWarmup; ++s) trainer.step(batch, kLr);
  const std::int64_t allocations = cache_of(device).system_allocations();
  device.reset_times();
  trainer.step(batch, kLr);
  EXPECT_EQ(cache_of(device).system_allocations(), allocations) << "blocks allocated from the system in a step";
  std::int64_t gradient_bytes = 0;
  for (Parameter* p : model.parameters()) gradient_bytes += 4 * p->numel();
  EXPECT_EQ(device.memory_op_times().bytes_of(MemoryOp::kFill), gradient_bytes)
      << "bytes zero-filled in one step (expected: the gradients only)";
}

}  // namespace
}  // namespace tessera::testing
