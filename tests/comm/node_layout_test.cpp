// NodeLayout: counting nodes and their ranks under consecutive and round-robin placements, naming
// nodes, and uneven nodes having no single rank count.
#include "tessera/comm/node_layout.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(NodeLayout, RoundRobinPlacement) {
  NodeLayout layout;
  layout.node_of_rank = {0, 1, 0, 1, 0, 1};
  layout.hosts = {"n1", "n2"};
  EXPECT_EQ(layout.num_ranks(), 6);
  EXPECT_EQ(layout.num_nodes(), 2);
  EXPECT_EQ(layout.ranks_of(1), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(layout.ranks_per_node(), 3);
  EXPECT_EQ(layout.ranks_node_by_node(), (std::vector<int>{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(layout.describe(), "n1: ranks 0, 2, 4; n2: ranks 1, 3, 5");
}

TEST(NodeLayout, UnevenNodesAndUnknownHosts) {
  NodeLayout layout;
  layout.node_of_rank = {0, 0, 0, 1};
  EXPECT_EQ(layout.ranks_per_node(), std::nullopt);
  EXPECT_EQ(layout.node_name(1), "node 1");
  EXPECT_EQ(layout.describe(), "node 0: ranks 0, 1, 2; node 1: rank 3");
}

TEST(NodeLayout, SingleNode) {
  const NodeLayout layout = NodeLayout::single_node(3);
  EXPECT_EQ(layout.num_nodes(), 1);
  EXPECT_EQ(layout.ranks_per_node(), 3);
  EXPECT_EQ(NodeLayout{}.num_nodes(), 1) << "an empty layout is one node";
}

TEST(NodeLayout, RankListIsCappedWithTheCount) {
  EXPECT_EQ(rank_list({0, 1, 2, 3}, 2), "0, 1, ... (4 in all)");
  EXPECT_EQ(rank_list({7}), "7");
}

}  // namespace
}  // namespace tessera
