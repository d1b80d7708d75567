// split_by_node / split_across_nodes: Communicator::split keyed by RankInfo.
#include "tessera/launch/node_groups.hpp"

namespace tessera {

std::unique_ptr<Communicator> split_by_node(Communicator& world, const RankInfo& info) {
  return world.split(info.node_rank, info.local_rank);
}

std::unique_ptr<Communicator> split_across_nodes(Communicator& world, const RankInfo& info) {
  return world.split(info.local_rank, info.node_rank);
}

}  // namespace tessera
