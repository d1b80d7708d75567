// gather_host_names / ranks_with_hosts.
#include "tessera/checkpointing/rank_hosts.hpp"

#include <algorithm>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/comm/node_layout.hpp"
#include "tessera/core/host_name.hpp"

namespace tessera {

std::vector<std::string> gather_host_names(Communicator& world) { return all_gather_strings(world, this_hostname()); }

std::string ranks_with_hosts(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::vector<std::string> order;  // hosts in order of their lowest rank
  for (const int r : ranks) {
    const std::string& host = hosts.at(static_cast<std::size_t>(r));
    if (std::find(order.begin(), order.end(), host) == order.end()) order.push_back(host);
  }
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t h = 0; h < order.size(); ++h) {
    std::vector<int> on_host;
    for (const int r : ranks) {
      if (hosts.at(static_cast<std::size_t>(r)) == order[h]) on_host.push_back(r);
    }
    if (h > 0) text += ", ";
    text += rank_list(on_host) + " (host " + order[h] + ")";
  }
  return text;
}

}  // namespace tessera
