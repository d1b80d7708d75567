// The planner against the engine on the small GPT (L=6 C=384 NH=6 V=8192 T=256) at micro-batch 1
// with activation checkpointing: every block checkpointed ("blocks") at ZeRO stages 0-3, and
// selective recomputation at ZeRO-3 with a bf16 reduce. Every category's peak during the second
// step (peaks reset just before it), the simultaneous peak and the state before it are within 5%
// of the prediction. plan_vs_engine_small_test.cpp runs the same without checkpointing, so ctest
// can run the two in parallel.
// tessera-test-ranks: 1 2 4
// tessera-test-timeout: 600
// tessera-test-cost: 5
#include <gtest/gtest.h>
#include <mpi.h>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera::testing {
namespace {

TEST(PlanVsEngineSmallRecompute, EveryStageWithBlockCheckpointing) {
  set_cpu_threads(1);
  MpiCommunicator world(MPI_COMM_WORLD);
  for (int st = 0; st <= 3; ++st) {
    const PlanConfig config = plan_for("small", parse_zero_stage(st), world.size(), 1, "blocks");
    const MemoryPlan plan = plan_memory(config);
    const MeasuredStep measured = measure_engine_step(config, world);
    expect_plan_matches(plan, measured, 0.05, config.describe() + ", rank " + std::to_string(world.rank()));
  }
}

TEST(PlanVsEngineSmallRecompute, SelectiveRecomputationAtStage3) {
  set_cpu_threads(1);
  MpiCommunicator world(MPI_COMM_WORLD);
  PlanConfig config = plan_for("small", ZeroStage::kStage3, world.size(), 1, "selective");
  config.precision.reduce_dtype = DType::kBF16;
  const MemoryPlan plan = plan_memory(config);
  const MeasuredStep measured = measure_engine_step(config, world);
  expect_plan_matches(plan, measured, 0.05, config.describe() + ", rank " + std::to_string(world.rank()));
}

}  // namespace
}  // namespace tessera::testing
