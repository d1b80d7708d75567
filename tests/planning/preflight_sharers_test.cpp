// The pre-flight check splits a node's free memory among the ranks on the node, counted from the
// communicator: every rank of an mpirun job on this machine shares it (ranks_on_node = the world's
// size), a launcher that puts each rank on a node of its own gives 1; the overload taking the world
// counts them itself, the other refuses a plan of several ranks whose sharers were not given; and a
// model of your own that does not fit gets the plan and what to change instead of the GPT advisor.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <map>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/planning/preflight.hpp"
#include "tessera/planning/ranks_on_node.hpp"
#include "tests/planning/token_mlp_model.hpp"

namespace tessera::testing {
namespace {

// A node's free memory with no per-process limit: 1 GB shared by the node's processes.
MemoryBudget node_budget() {
  MemoryBudget b;
  b.shared_bytes = 1000000000;
  b.shared_source = "MemAvailable";
  return b;
}

TEST(PreflightSharers, EveryRankOfThisMachineSharesItsNode) {
  MpiCommunicator world(MPI_COMM_WORLD);
  EXPECT_EQ(ranks_on_node(world), world.size()) << "rank " << world.rank();
  // With no launcher variables the ranks are grouped by host name: the same answer.
  EXPECT_EQ(ranks_on_node(world, fixed_environment({})), world.size()) << "rank " << world.rank();
}

TEST(PreflightSharers, ALauncherPlacingEachRankOnItsOwnNodeGivesOne) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::string rank = std::to_string(world.rank()), size = std::to_string(world.size());
  const EnvLookup srun = fixed_environment({{"SLURM_JOB_ID", "7"},
                                            {"SLURM_STEP_ID", "0"},
                                            {"SLURM_PROCID", rank},
                                            {"SLURM_STEP_NUM_TASKS", size},
                                            {"SLURM_LOCALID", "0"},
                                            {"SLURM_NODEID", rank},
                                            {"SLURM_STEP_NUM_NODES", size}});
  EXPECT_EQ(ranks_on_node(world, srun), 1) << "rank " << world.rank();
}

TEST(PreflightSharers, TheWorldOverloadSplitsTheNodesMemory) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const PlanConfig config = plan_for("tiny", ZeroStage::kStage3, world.size(), 2);
  const PreflightCheck check = preflight_memory_check(config, node_budget(), world);
  EXPECT_EQ(check.available, 1000000000 / world.size()) << "rank " << world.rank();
  EXPECT_TRUE(check.fits) << check.summary();
  if (world.size() > 1) {
    EXPECT_NE(check.available_text().find("shared by " + std::to_string(world.size()) + " processes"),
              std::string::npos)
        << check.available_text();
  }
  // A plan for another job size is refused, naming both.
  PlanConfig other = config;
  other.ranks = world.size() + 1;
  try {
    preflight_memory_check(other, node_budget(), world);
    FAIL() << "a plan for " << other.ranks << " ranks was checked on " << world.size();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("for " + std::to_string(other.ranks) + " ranks"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(world.size()) + " are running"), std::string::npos) << message;
  }
}

TEST(PreflightSharers, WithoutTheWorldSeveralRanksNeedTheirSharers) {
  const MemoryBudget budget = node_budget();
  const PlanConfig one = plan_for("tiny", ZeroStage::kStage0, 1, 2);
  EXPECT_EQ(preflight_memory_check(one, budget).available, 1000000000) << "one rank shares its node with none";
  const PlanConfig two = plan_for("tiny", ZeroStage::kStage0, 2, 2);
  try {
    preflight_memory_check(two, budget);
    FAIL() << "sharers defaulted silently for a plan of 2 ranks";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("PreflightOptions::sharers"), std::string::npos) << e.what();
  }
  PreflightOptions options;
  options.sharers = 2;
  EXPECT_EQ(preflight_memory_check(two, budget, options).available, 500000000);
}

TEST(PreflightSharers, ACustomModelThatDoesNotFitSaysWhatToChange) {
  MpiCommunicator world(MPI_COMM_WORLD);
  PlanConfig c;
  c.model = model_from_module("token mlp", token_mlp_model());
  c.ranks = world.size();
  c.micro_batch = 4;
  MemoryBudget tiny;
  tiny.process_bytes = 1000;  // less than the model state
  tiny.process_source = "a test's limit";
  PreflightOptions options;
  options.margin_bytes = 0;
  const PreflightCheck check = preflight_memory_check(c, tiny, world, options);
  EXPECT_FALSE(check.fits);
  EXPECT_GT(check.predicted, 1000);
  EXPECT_TRUE(check.plan.has_step);
  EXPECT_FALSE(check.recommendation.has_value());
  EXPECT_NE(check.report().find("smaller micro-batch"), std::string::npos) << check.report();
}

}  // namespace
}  // namespace tessera::testing
