// NodeLayout: counting, listing and naming the nodes of a job.
#include "tessera/comm/node_layout.hpp"

#include <algorithm>

namespace tessera {

NodeLayout NodeLayout::single_node(int ranks) {
  NodeLayout layout;
  layout.node_of_rank.assign(static_cast<std::size_t>(std::max(ranks, 0)), 0);
  return layout;
}

int NodeLayout::num_nodes() const {
  if (node_of_rank.empty()) return 1;
  return *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
}

std::vector<int> NodeLayout::ranks_of(int node) const {
  std::vector<int> ranks;
  for (int r = 0; r < num_ranks(); ++r) {
    if (node_of_rank[static_cast<std::size_t>(r)] == node) ranks.push_back(r);
  }
  return ranks;
}

std::vector<int> NodeLayout::ranks_node_by_node() const {
  std::vector<int> order;
  for (int n = 0; n < num_nodes(); ++n) {
    for (const int r : ranks_of(n)) order.push_back(r);
  }
  return order;
}

std::optional<int> NodeLayout::ranks_per_node() const {
  const int nodes = num_nodes();
  if (node_of_rank.empty()) return std::nullopt;
  const std::size_t first = ranks_of(0).size();
  for (int n = 1; n < nodes; ++n) {
    if (ranks_of(n).size() != first) return std::nullopt;
  }
  return static_cast<int>(first);
}

std::string NodeLayout::node_name(int node) const {
  if (node >= 0 && static_cast<std::size_t>(node) < hosts.size() && !hosts[static_cast<std::size_t>(node)].empty())
    return hosts[static_cast<std::size_t>(node)];
  return "node " + std::to_string(node);
}

std::string NodeLayout::describe() const {
  std::string text;
  for (int n = 0; n < num_nodes(); ++n) {
    if (!text.empty()) text += "; ";
    const std::vector<int> ranks = ranks_of(n);
    text += node_name(n) + (ranks.size() == 1 ? ": rank " : ": ranks ") + rank_list(ranks);
  }
  return text;
}

std::string rank_list(const std::vector<int>& ranks, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size() && i < limit; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
  }
  if (ranks.size() > limit) text += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return text;
}

}  // namespace tessera
