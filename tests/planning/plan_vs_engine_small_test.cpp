// The planner against the engine on the small GPT (L=6 C=384 NH=6 V=8192 T=256) at micro-batch 1
// without activation checkpointing: for ZeRO stages 0-3, every category's peak during the second
// step (peaks reset just before it), the simultaneous peak and the state before it are within 5%
// of the prediction. plan_vs_engine_small_recompute_test.cpp runs the same with checkpointing, so ctest
// can run the two in parallel.
// tessera-test-ranks: 1 2 4
// tessera-test-timeout: 600
#include <gtest/gtest.h>
#include <mpi.h>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera::testing {
namespace {

TEST(PlanVsEngineSmall, EveryStageWithoutCheckpointing) {
  set_cpu_threads(1);
  MpiCommunicator world(MPI_COMM_WORLD);
  for (int st = 0; st <= 3; ++st) {
    const PlanConfig config = plan_for("small", parse_zero_stage(st), world.size(), 1, "none");
    const MemoryPlan plan = plan_memory(config);
    const MeasuredStep measured = measure_engine_step(config, world);
    expect_plan_matches(plan, measured, 0.05, config.describe() + ", rank " + std::to_string(world.rank()));
  }
}

}  // namespace
}  // namespace tessera::testing
