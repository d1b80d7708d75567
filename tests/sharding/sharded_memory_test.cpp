// Memory truth: per rank, the tracked model-state bytes of each ZeRO stage equal the ZeRO table
// (docs/ARCHITECTURE.md) to the byte (f32 params: params 4P | 4S, grads 4P | 4S, Adam m+v 8P | 8S), and the
// transient buffers stay within the documented allowance.
// tessera-test-ranks: 2 4
#include <gtest/gtest.h>

#include <algorithm>

#include "sharding_test_support.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

struct Sizes {
  std::int64_t padded = 0, shard = 0, largest_three = 0, largest_four = 0;
};

Sizes unit_sizes(const ShardedEngine& engine) {
  Sizes s;
  std::vector<std::int64_t> p;
  for (const auto& u : engine.units()) {
    s.padded += u->layout().padded_numel();
    s.shard += u->layout().shard_numel();
    p.push_back(u->layout().padded_numel());
  }
  std::sort(p.rbegin(), p.rend());
  for (std::size_t i = 0; i < p.size() && i < 4; ++i) {
    if (i < 3) s.largest_three += p[i];
    s.largest_four += p[i];
  }
  return s;
}

TEST(ShardedMemory, ModelStateBytesMatchTheStageFormula) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
    auto device = make_cpu_device();
    Gpt model(tiny_gpt());
    ShardingConfig config;
    config.stage = stage;
    ShardedEngine engine(model, *device, world, config, kSeed);
    const Sizes s = unit_sizes(engine);
    const int st = zero_stage_number(stage);
    const std::string where = "stage " + std::to_string(st) + ", rank " + std::to_string(world.rank()) + " of " +
                              std::to_string(world.size());
    MemoryTracker& m = device->memory();
    const std::int64_t params = st < 3 ? 4 * s.padded : 4 * s.shard;
    const std::int64_t grads = st < 2 ? 4 * s.padded : 4 * s.shard;
    const std::int64_t optim = st == 0 ? 8 * s.padded : 8 * s.shard;
    EXPECT_EQ(m.current(MemoryCategory::kParameters), params) << where;
    EXPECT_EQ(m.current(MemoryCategory::kGradients), grads) << where;
    EXPECT_EQ(m.current(MemoryCategory::kOptimizerState), optim) << where;
    // The padded sizes are the unpadded parameter count rounded up per unit to the rank count.
    EXPECT_GE(s.padded, model.parameter_count());
    EXPECT_LT(s.padded, model.parameter_count() + static_cast<std::int64_t>(engine.units().size()) * world.size());

    const std::int64_t micro = 2;
    const MicroBatch batch = global_rows(*device, tiny_gpt(), 0, world.rank() * micro, micro);
    m.reset_peaks();
    Trainer(engine).train_step({batch}, kLr);
    // After the step every transient is gone; model state is unchanged.
    EXPECT_EQ(m.current(MemoryCategory::kParameters), params) << where;
    EXPECT_EQ(m.current(MemoryCategory::kGradients), grads) << where;
    EXPECT_EQ(m.current(MemoryCategory::kOptimizerState), optim) << where;
    EXPECT_EQ(m.current(MemoryCategory::kCommBuffers), 0) << where;
    EXPECT_EQ(m.current(MemoryCategory::kActivations), 0) << where;
    // Transients: stages 2-3 hold at most four units' full f32 gradients at once (the unit computing,
    // two reductions in flight, and the tied embedding's buffer, which lives through the whole
    // backward); stage 3 holds at most three units' gathered parameters (running, prefetched, tied).
    if (st >= 2) {
      EXPECT_LE(m.peak(MemoryCategory::kGradients), grads + 4 * s.largest_four) << where;
    } else {
      EXPECT_EQ(m.peak(MemoryCategory::kGradients), grads) << where;
    }
    if (st == 3) {
      EXPECT_GT(m.peak(MemoryCategory::kCommBuffers), 0) << where;
      EXPECT_LE(m.peak(MemoryCategory::kCommBuffers), 4 * s.largest_three) << where;
    } else {
      EXPECT_EQ(m.peak(MemoryCategory::kCommBuffers), 0) << where;
    }
  }
}

}  // namespace
}  // namespace tessera::testing
