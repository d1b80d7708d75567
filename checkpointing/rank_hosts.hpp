// Ranks named with their hosts in checkpoint messages: "ranks 2, 3 (host n2)". A directory that is
// not the same on every node shows up as ranks of one host answering differently from the others.
#pragma once

#include <string>
#include <vector>

#include "tessera/comm/communicator.hpp"

namespace tessera {

// Collective over `world`: every rank's host name, in rank order.
std::vector<std::string> gather_host_names(Communicator& world);

// "ranks 2, 3 (host n2)" or "ranks 0 (host n1), 5 (host n3)": `ranks` ascending, grouped by host.
std::string ranks_with_hosts(const std::vector<int>& ranks, const std::vector<std::string>& hosts);

}  // namespace tessera
