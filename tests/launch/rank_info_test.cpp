// discover_rank_info and the node groups: values from mpirun's environment checked against MPI,
// Slurm-style node ids (simulated per rank) grouping ranks into nodes, launcher values that disagree
// with MPI being ignored, and split_by_node / split_across_nodes forming the matching groups.
// tessera-test-ranks: 1 2 3 4
#include "tessera/launch/rank_info.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/node_groups.hpp"

namespace tessera {
namespace {

TEST(RankInfo, FromThisMpirun) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const RankInfo info = discover_rank_info(world, read_launcher_env(process_environment()));
  EXPECT_EQ(info.launcher, Launcher::kOpenMpi);
  EXPECT_EQ(info.rank, world.rank());
  EXPECT_EQ(info.world_size, world.size());
  // One host runs every rank of this test.
  EXPECT_EQ(info.num_nodes, 1);
  EXPECT_EQ(info.node_rank, 0);
  EXPECT_EQ(info.local_rank, world.rank());
  EXPECT_EQ(info.local_size, world.size());
  EXPECT_EQ(info.hostname, this_hostname());
  EXPECT_FALSE(info.hostname.empty());
  EXPECT_EQ(info.is_root(), world.rank() == 0);
  EXPECT_NE(
      info.describe().find("rank " + std::to_string(world.rank()) + "/" + std::to_string(world.size()) + " (host "),
      std::string::npos)
      << info.describe();
}

// Two ranks per simulated node, with sparse Slurm node ids 3, 13, 23, ...
LauncherEnv simulated_slurm(int rank, int size) {
  return read_launcher_env(fixed_environment({{"SLURM_JOB_ID", "77"},
                                              {"SLURM_STEP_ID", "0"},
                                              {"SLURM_PROCID", std::to_string(rank)},
                                              {"SLURM_NTASKS", std::to_string(size)},
                                              {"SLURM_LOCALID", std::to_string(rank % 2)},
                                              {"SLURM_NODEID", std::to_string(3 + 10 * (rank / 2))}}));
}

TEST(RankInfo, SlurmNodeIdsGroupRanksIntoNodes) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const int n = world.size();
  const int r = world.rank();
  const RankInfo info = discover_rank_info(world, simulated_slurm(r, n));
  EXPECT_EQ(info.launcher, Launcher::kSlurm);
  EXPECT_EQ(info.num_nodes, (n + 1) / 2);
  EXPECT_EQ(info.node_rank, r / 2) << "node ids are renumbered densely";
  EXPECT_EQ(info.local_rank, r % 2);
  EXPECT_EQ(info.local_size, std::min(2, n - 2 * (r / 2)));
  ASSERT_EQ(info.nodes.num_ranks(), n) << "every rank's node is known on every rank";
  for (int q = 0; q < n; ++q) EXPECT_EQ(info.nodes.node_of_rank[static_cast<std::size_t>(q)], q / 2);
  ASSERT_EQ(info.nodes.hosts.size(), static_cast<std::size_t>(info.num_nodes));
  EXPECT_EQ(info.nodes.hosts[0], this_hostname()) << "simulated nodes on one host keep its name";

  std::unique_ptr<Communicator> node = split_by_node(world, info);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->size(), info.local_size);
  EXPECT_EQ(node->rank(), info.local_rank);
  std::vector<std::int32_t> members{r};
  node->all_reduce(members, DType::kI32, ReduceOp::kSum).wait();
  const int expected_node_sum = info.local_size == 2 ? 2 * r - info.local_rank * 2 + 1 : r;  // 2k + (2k+1)
  EXPECT_EQ(members[0], expected_node_sum) << "rank " << r;

  std::unique_ptr<Communicator> across = split_across_nodes(world, info);
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(across->rank(), info.node_rank);
  std::vector<std::int32_t> count{1};
  across->all_reduce(count, DType::kI32, ReduceOp::kSum).wait();
  EXPECT_EQ(count[0], info.local_rank == 0 ? (n + 1) / 2 : n / 2) << "rank " << r;
}

TEST(RankInfo, LauncherValuesThatDisagreeWithMpiAreIgnored) {
  MpiCommunicator world(MPI_COMM_WORLD);
  // What every rank sees when the ranks were started by a launcher whose daemons srun started as a
  // one-task step: that step's SLURM_PROCID=0 on every rank.
  const LauncherEnv stale = read_launcher_env(fixed_environment({{"SLURM_JOB_ID", "77"},
                                                                 {"SLURM_STEP_ID", "3"},
                                                                 {"SLURM_PROCID", "0"},
                                                                 {"SLURM_STEP_NUM_TASKS", "1"},
                                                                 {"SLURM_NODEID", std::to_string(world.rank())}}));
  const RankInfo info = discover_rank_info(world, stale);
  EXPECT_EQ(info.rank, world.rank());
  if (world.size() > 1) {
    EXPECT_EQ(info.launcher, Launcher::kNone);
    EXPECT_EQ(info.num_nodes, 1) << "grouped by host name, not by the stale node ids";
  } else {
    EXPECT_EQ(info.launcher, Launcher::kSlurm) << "one rank: the values agree with MPI";
  }
  EXPECT_EQ(info.local_rank, world.rank());
}

TEST(RankInfo, ABatchScriptsSlurmValuesDescribeNoLaunch) {
  MpiCommunicator world(MPI_COMM_WORLD);
  // The batch script's own SLURM_PROCID=0 (no SLURM_STEP_ID), seen by ranks that mpiexec started.
  const LauncherEnv batch = read_launcher_env(
      fixed_environment({{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODEID", "0"}}));
  EXPECT_EQ(batch.launcher, Launcher::kNone);
  const RankInfo info = discover_rank_info(world, batch);
  EXPECT_EQ(info.launcher, Launcher::kNone);
  EXPECT_EQ(info.rank, world.rank());
  EXPECT_EQ(info.local_rank, world.rank()) << "grouped by host name";
}

TEST(RankInfo, DeviceIndexFollowsTheLocalRank) {
  RankInfo info;
  info.local_rank = 5;
  EXPECT_EQ(info.device_index(8), 5);
  EXPECT_EQ(info.device_index(4), 1);
  EXPECT_EQ(info.device_index(1), 0) << "one visible GPU per rank";
  EXPECT_EQ(info.device_index(0), -1);
}

}  // namespace
}  // namespace tessera
