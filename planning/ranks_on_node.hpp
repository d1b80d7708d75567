// ranks_on_node: how many ranks of a job run on this rank's node — the processes that split the
// node's free memory, which the pre-flight check shares among them (PreflightOptions::sharers).
// Nodes are grouped as launch/ groups them (discover_rank_info): by the launcher's node id where
// every rank has a consistent one (Slurm), else by host name.
#pragma once

#include "tessera/comm/communicator.hpp"
#include "tessera/launch/environment.hpp"
#include "tessera/launch/rank_info.hpp"

namespace tessera {

// From rank facts already discovered (RankInfo::local_size, at least 1): no communication.
int ranks_on_node(const RankInfo& info);

// Collective over `world` (every rank calls it together): one all-gather of each rank's launcher
// values and host name. `env` is the launcher's environment (the process's by default).
int ranks_on_node(Communicator& world, const EnvLookup& env = process_environment());

}  // namespace tessera
