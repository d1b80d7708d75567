// The planner against the engine on a model the library does not ship (token_mlp_model.hpp:
// Embedding -> LayerNorm -> Linear+GELU -> Linear+GELU -> Linear, trained with a mean squared error
// in its own step function): planned from its build function, its micro-batch (i32 ids and f32
// targets) and its step, then trained on the CPU for two steps — every category before, during and
// after the step, every tier and the step's timeline phase by phase equal to the byte, at ZeRO-0 and
// ZeRO-3 with and without accumulation, and with checkpointed Linears and bf16 parameters. The plan
// comes from the run's own BatchPlan and ShardingConfig (PlanConfig::for_run).
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tests/planning/token_mlp_model.hpp"

namespace tessera::testing {
namespace {

// The plan of a run of the token MLP: micro 2 x `ranks` x `accumulation`, at `stage`, on the CPU.
PlanConfig token_mlp_plan(ZeroStage stage, int ranks, std::int64_t accumulation, std::vector<double>* losses) {
  BatchRequest request;
  request.micro = 2;
  request.accumulation = accumulation;
  request.data_parallel_ranks = ranks;
  request.seq_len = kMlpSeqLen;
  ShardingConfig sharding;
  sharding.stage = stage;
  PlanConfig c =
      PlanConfig::for_run(model_from_module("token mlp", token_mlp_model(losses)), sharding, plan_batch(request));
  c.host_is_device = true;  // measured on the CPU device
  return c;
}

// Plans `config` and measures it on the CPU; EXPECTs them equal to the byte. Returns the losses the
// measured run's two steps recorded on this rank (the warm-up's, the measured step's).
std::vector<double> check_token_mlp(const PlanConfig& config, Communicator& world, std::vector<double>& losses) {
  losses.clear();
  const MemoryPlan plan = plan_memory(config);
  EXPECT_TRUE(losses.empty()) << "the planner's meta device holds no data: its step reads no loss";
  const MeasuredStep measured = measure_engine_step(config, world, {.device = DeviceChoice::kCpu});
  const std::string at = where(config, world.rank());
  expect_plan_exact(plan, measured, at);
  EXPECT_TRUE(plan.has_step) << at;
  EXPECT_GT(plan.peak(MemoryCategory::kActivations), 0) << at;
  EXPECT_GT(plan.peak(MemoryCategory::kWorkspace), 0) << at;
  if (config.stage == ZeroStage::kStage3) {
    EXPECT_GT(plan.peak(MemoryCategory::kCommBuffers), 0) << at;
  }
  EXPECT_EQ(format_plan(plan).find("needs an architecture"), std::string::npos) << at << ":\n" << format_plan(plan);
  EXPECT_EQ(losses.size(), 2u) << at << ": the measured run trains two steps";
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss) && loss > 0.0) << at << ": loss " << loss;
  return losses;
}

TEST(PlanVsEngineCustomModel, ZeroStages0And3ToTheByte) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (std::int64_t accumulation : {1, 3}) {
    std::vector<double> losses;
    const std::vector<double> zero0 =
        check_token_mlp(token_mlp_plan(ZeroStage::kStage0, world.size(), accumulation, &losses), world, losses);
    const std::vector<double> zero3 =
        check_token_mlp(token_mlp_plan(ZeroStage::kStage3, world.size(), accumulation, &losses), world, losses);
    if (accumulation == 1) {
      // The same model, data and seed: ZeRO-3 trains what ZeRO-0 trains, bit for bit.
      EXPECT_EQ(zero0, zero3) << "losses at ZeRO-0 and ZeRO-3, rank " << world.rank();
    }
  }
}

TEST(PlanVsEngineCustomModel, CheckpointedLinearsAndBf16Parameters) {
  MpiCommunicator world(MPI_COMM_WORLD);
  std::vector<double> losses;
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    PlanConfig c = token_mlp_plan(stage, world.size(), 2, &losses);
    c.recompute = RecomputePolicy::by_type("Linear");
    check_token_mlp(c, world, losses);
    c.precision.param_dtype = DType::kBF16;
    c.precision.reduce_dtype = DType::kBF16;
    check_token_mlp(c, world, losses);
  }
}

TEST(PlanVsEngineCustomModel, TimelineIsTheMeasuredOne) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    const PlanConfig c = token_mlp_plan(stage, world.size(), 2, nullptr);
    const MemoryPlan plan = plan_memory(c);
    const MeasuredStep profiled = measure_engine_step(c, world, {.profile = true, .device = DeviceChoice::kCpu});
    expect_same_timeline(plan.timeline, profiled.timeline, where(c, world.rank()));
    EXPECT_NE(plan.timeline.size(), 0u);
  }
}

}  // namespace
}  // namespace tessera::testing
