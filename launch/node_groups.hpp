// Node groups for hybrid sharding: split the world into the ranks of one node (shard inside a node
// over the fast links) and into one rank per node (replicate across nodes).
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"
#include "tessera/launch/rank_info.hpp"

namespace tessera {

// Collective over `world`. The ranks on this rank's node, ranked by local rank (named "<world>/<node_rank>").
std::unique_ptr<Communicator> split_by_node(Communicator& world, const RankInfo& info);

// Collective over `world`. The ranks with this rank's local rank, one per node, ranked by node;
// named "<world>/<local_rank>".
std::unique_ptr<Communicator> split_across_nodes(Communicator& world, const RankInfo& info);

}  // namespace tessera
