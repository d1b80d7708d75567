// run_distributed under mpirun (MPI already up in this test binary): the body sees the world, its
// RankInfo and node groups, the environment switches reach the communicators, and the body's exit
// code is returned.
// tessera-test-ranks: 1 2 4
#include "tessera/launch/run_distributed.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <vector>

namespace tessera {
namespace {

TEST(RunDistributed, BodySeesTheWorldAndItsExitCodeIsReturned) {
  int mpi_rank = 0;
  int mpi_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  char name[] = "run_distributed_test";
  char* argv[] = {name, nullptr};
  const int code = run_distributed(1, argv, [&](DistributedContext& ctx) {
    EXPECT_EQ(ctx.rank(), mpi_rank);
    EXPECT_EQ(ctx.world_size(), mpi_size);
    EXPECT_EQ(ctx.world().size(), mpi_size);
    EXPECT_EQ(ctx.rank_info().launcher, Launcher::kOpenMpi);
    EXPECT_EQ(ctx.node().size(), mpi_size) << "every rank runs on this host";
    EXPECT_EQ(ctx.cross_node().size(), 1);
    EXPECT_EQ(ctx.argc(), 1);
    std::vector<float> one{1.0f};
    ctx.world().all_reduce(one, DType::kF32, ReduceOp::kSum).wait();
    EXPECT_EQ(one[0], static_cast<float>(mpi_size));
    return 40 + ctx.rank();
  });
  EXPECT_EQ(code, 40 + mpi_rank);
  int finalized = 0;
  MPI_Finalized(&finalized);
  EXPECT_FALSE(finalized) << "MPI was initialised by the test harness, so run_distributed leaves it running";
}

TEST(RunDistributed, EnvironmentSwitchesReachTheCommunicators) {
  setenv("TESSERA_DEBUG_COLLECTIVES", "1", 1);
  setenv("TESSERA_COLLECTIVE_TIMEOUT", "123", 1);
  char name[] = "run_distributed_test";
  char* argv[] = {name, nullptr};
  const int code = run_distributed(1, argv, [](DistributedContext& ctx) {
    EXPECT_EQ(ctx.world().collective_check(), CollectiveCheck::kMatchCalls);
    EXPECT_EQ(ctx.node().collective_check(), CollectiveCheck::kMatchCalls);
    EXPECT_EQ(ctx.comm_options().watchdog_timeout, std::chrono::seconds(123));
    return 0;
  });
  unsetenv("TESSERA_DEBUG_COLLECTIVES");
  unsetenv("TESSERA_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace tessera
