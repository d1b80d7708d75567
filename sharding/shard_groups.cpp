// make_shard_groups: hybrid groups cut from the ranks taken node by node, by splitting the world.
#include "tessera/sharding/shard_groups.hpp"

#include <algorithm>
#include <stdexcept>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

// Throws when a group of `h` consecutive ranks of `order` takes part of a node and another node
// besides (a group inside one node, or made of whole nodes, is fine).
void check_groups_fit_nodes(const NodeLayout& layout, const std::vector<int>& order, int h) {
  for (std::size_t first = 0; first < order.size(); first += static_cast<std::size_t>(h)) {
    std::vector<int> nodes;
    for (std::size_t i = first; i < first + static_cast<std::size_t>(h); ++i) {
      const int node = layout.node_of_rank[static_cast<std::size_t>(order[i])];
      if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    }
    if (nodes.size() < 2) continue;
    for (const int node : nodes) {
      std::size_t inside = 0;
      for (std::size_t i = first; i < first + static_cast<std::size_t>(h); ++i) {
        inside += layout.node_of_rank[static_cast<std::size_t>(order[i])] == node ? 1 : 0;
      }
      if (inside == layout.ranks_of(node).size()) continue;
      std::vector<int> members(order.begin() + static_cast<std::ptrdiff_t>(first),
                               order.begin() + static_cast<std::ptrdiff_t>(first) + h);
      std::sort(members.begin(), members.end());
      throw SettingError("sharding.hybrid_group", std::to_string(h),
                         "groups of " + std::to_string(h) + " ranks do not fit the nodes (" + layout.describe() +
                             "): the group of ranks " + rank_list(members) + " would take part of " +
                             layout.node_name(node) +
                             " and ranks of another node, so its parameter gathers would cross the node links "
                             "every step; choose a divisor or a multiple of the ranks per node, or the ranks of "
                             "one node (node)");
    }
  }
}

}  // namespace

ShardGroups make_shard_groups(Communicator& world, ZeroStage stage, int hybrid_group, const NodeLayout& nodes) {
  const int h = hybrid_group;
  if (h < 0 || (h > 0 && world.size() % h != 0)) {
    throw SettingError("sharding.hybrid_group", std::to_string(h),
                       "must divide the number of ranks " + std::to_string(world.size()) +
                           " (groups are taken node by node, in rank order within a node)");
  }
  if (!nodes.node_of_rank.empty() && nodes.num_ranks() != world.size()) {
    throw std::invalid_argument("make_shard_groups: a node layout of " + std::to_string(nodes.num_ranks()) +
                                " ranks for a world of " + std::to_string(world.size()));
  }
  const NodeLayout layout = nodes.node_of_rank.empty() ? NodeLayout::single_node(world.size()) : nodes;
  ShardGroups groups;
  groups.shard = &world;
  if (stage != ZeroStage::kStage0 && h > 0 && h < world.size()) {
    const std::vector<int> order = layout.ranks_node_by_node();
    check_groups_fit_nodes(layout, order, h);
    const int position = static_cast<int>(std::find(order.begin(), order.end(), world.rank()) - order.begin());
    groups.owned_shard = world.split(position / h, position % h);
    groups.owned_replicate = world.split(position % h, position / h);
    groups.shard = groups.owned_shard.get();
    groups.replicate = groups.owned_replicate.get();
  }
  return groups;
}

int node_hybrid_group(const NodeLayout& nodes) {
  if (nodes.node_of_rank.empty()) {
    throw std::invalid_argument("node_hybrid_group: the node layout is not known (no ranks)");
  }
  const std::optional<int> per_node = nodes.ranks_per_node();
  if (!per_node) {
    throw SettingError("sharding.hybrid_group", "node",
                       "needs the same number of ranks on every node, and this job has " + nodes.describe() +
                           "; launch as many ranks on each node, or give a group size");
  }
  return *per_node;
}

}  // namespace tessera
