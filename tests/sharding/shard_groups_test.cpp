// make_shard_groups with node layouts: hybrid groups follow the nodes under a round-robin
// placement (--map-by node), a group size that would cut a node is refused naming the group, and
// "the ranks of one node" needs even nodes. The layouts are given, so one host stands for several.
// tessera-test-ranks: 4
#include "tessera/sharding/shard_groups.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

// The world ranks of `group`, in its rank order.
std::vector<int> members(Communicator& group, int world_rank) { return all_gather_values(group, world_rank); }

TEST(ShardGroups, RoundRobinNodesShardWithinEachNode) {
  MpiCommunicator world(MPI_COMM_WORLD);
  ASSERT_EQ(world.size(), 4);
  NodeLayout layout;
  layout.node_of_rank = {0, 1, 0, 1};  // --map-by node over two nodes
  layout.hosts = {"n1", "n2"};
  ASSERT_EQ(node_hybrid_group(layout), 2);
  ShardGroups groups = make_shard_groups(world, ZeroStage::kStage3, 2, layout);
  ASSERT_NE(groups.replicate, nullptr);
  const int r = world.rank();
  EXPECT_EQ(members(*groups.shard, r), (r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3}));
  EXPECT_EQ(members(*groups.replicate, r), (r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}))
      << "one rank of each node holds the same shard";
}

TEST(ShardGroups, ConsecutiveRanksWithoutALayout) {
  MpiCommunicator world(MPI_COMM_WORLD);
  ShardGroups groups = make_shard_groups(world, ZeroStage::kStage2, 2);
  const int r = world.rank();
  EXPECT_EQ(members(*groups.shard, r), (r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}));
}

TEST(ShardGroups, GroupsOfWholeNodes) {
  MpiCommunicator world(MPI_COMM_WORLD);
  NodeLayout layout;
  layout.node_of_rank = {0, 1, 2, 3};  // one rank per node: a group of 2 takes two whole nodes
  ShardGroups groups = make_shard_groups(world, ZeroStage::kStage3, 2, layout);
  const int r = world.rank();
  EXPECT_EQ(members(*groups.shard, r), (r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}));
}

TEST(ShardGroups, AGroupThatCutsANodeIsRefused) {
  MpiCommunicator world(MPI_COMM_WORLD);
  NodeLayout layout;
  layout.node_of_rank = {0, 0, 0, 1};
  layout.hosts = {"n1", "n2"};
  try {
    make_shard_groups(world, ZeroStage::kStage3, 2, layout);
    FAIL() << "groups {0, 1} and {2, 3} cut n1";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "sharding.hybrid_group");
    const std::string what = e.what();
    EXPECT_NE(what.find("groups of 2 ranks do not fit the nodes (n1: ranks 0, 1, 2; n2: rank 3): the group of ranks "
                        "2, 3 would take part of n1"),
              std::string::npos)
        << what;
  }
  try {
    node_hybrid_group(layout);
    FAIL() << "uneven nodes have no group of one node";
  } catch (const SettingError& e) {
    EXPECT_NE(std::string(e.what()).find("needs the same number of ranks on every node, and this job has n1: ranks 0, "
                                         "1, 2; n2: rank 3"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera
