// The planner against the engine under tensor parallelism: GPT-2 and Llama (grouped-query
// attention) split over tp 2 and 4 ranks times the data-parallel rest, ZeRO-1 and ZeRO-3, every
// checkpointing policy, sequence parallelism on and off — every category to the byte, on every rank
// of the group (the vocabulary of 13 splits unevenly, so the ranks' pieces differ); and sequence
// parallelism cutting the planned activations.
// tessera-test-ranks: 2 4
#include <gtest/gtest.h>
#include <mpi.h>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera::testing {
namespace {

// The tiny GPT with heads and hidden features a group of 4 divides.
PlanConfig tp_plan(const std::string& preset, ZeroStage stage, int tp, int world, int rank, bool sp,
                   const char* policy) {
  PlanConfig c = plan_for(preset, stage, world / tp, 2, policy);
  if (preset == "tiny") {
    c.model.gpt->heads = 4;
    c.model.gpt->channels = 16;
  }
  c.tp = tp;
  c.tp_rank = rank % tp;
  c.sequence_parallel = sp;
  c.host_is_device = true;  // measured on the CPU device
  return c;
}

TEST(PlanVsEngineTensorParallel, EveryCategoryToTheByteOnEveryRank) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (int tp : {2, 4}) {
    if (tp > world.size()) continue;
    for (const char* preset : {"tiny", "llama-tiny"}) {
      if (std::string(preset) == "llama-tiny" && tp == 4) continue;  // its 2 key/value heads
      for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage3}) {
        for (bool sp : {true, false}) {
          for (const char* policy : {"none", "blocks", "selective"}) {
            const PlanConfig c = tp_plan(preset, stage, tp, world.size(), world.rank(), sp, policy);
            const MemoryPlan plan = plan_memory(c);
            const MeasuredStep measured = measure_engine_step(c, world, {.device = DeviceChoice::kCpu});
            expect_plan_exact(plan, measured, where(c, world.rank()));
          }
        }
      }
    }
  }
}

TEST(PlanVsEngineTensorParallel, SequenceParallelismCutsActivations) {
  for (int tp : {2, 4}) {
    PlanConfig on = tp_plan("tiny", ZeroStage::kStage3, tp, tp, 0, true, "none");
    on.model.gpt->max_seq_len = 64;  // activations dominate
    PlanConfig off = on;
    off.sequence_parallel = false;
    PlanConfig one = on;
    one.tp = 1;
    const std::int64_t with_sp = plan_memory(on).peak(MemoryCategory::kActivations);
    const std::int64_t without = plan_memory(off).peak(MemoryCategory::kActivations);
    const std::int64_t unsplit = plan_memory(one).peak(MemoryCategory::kActivations);
    EXPECT_LT(with_sp, without) << "tp " << tp;
    EXPECT_LT(without, unsplit) << "tp " << tp;
  }
}

}  // namespace
}  // namespace tessera::testing
