// NodeLayout: which node each rank of a job runs on, as the launcher placed them (consecutive
// ranks per node with --map-by slot, round-robin with --map-by node, anything with a rankfile).
// Node-aware shard groups and the multi-node checks read it; launch/ discovers it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera {

struct NodeLayout {
  std::vector<int> node_of_rank;   // by world rank: the node's index (0..num_nodes-1); empty: one node
  std::vector<std::string> hosts;  // by node index: its host name (may be empty)

  // The layout of `ranks` ranks on one node.
  static NodeLayout single_node(int ranks);

  int num_ranks() const { return static_cast<int>(node_of_rank.size()); }
  int num_nodes() const;
  // The ranks on `node`, ascending.
  std::vector<int> ranks_of(int node) const;
  // Every rank, node by node (nodes in index order, ranks ascending within a node): the order in
  // which hybrid groups and two-level collectives take them.
  std::vector<int> ranks_node_by_node() const;
  // Every node's rank count when they are all equal; nullopt otherwise.
  std::optional<int> ranks_per_node() const;
  // "n1" (the host), or "node 1" when the host is not known.
  std::string node_name(int node) const;
  // "n1: ranks 0, 2; n2: ranks 1, 3"
  std::string describe() const;
};

// "0, 2, 5" (at most `limit` ranks, then ", ... (N in all)").
std::string rank_list(const std::vector<int>& ranks, std::size_t limit = 16);

}  // namespace tessera
