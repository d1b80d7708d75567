// Which collectives a multi-node job runs: flat (one direct algorithm over all ranks, summing in
// rank order) or two-level (HierarchicalCommunicator: inside each node, then across nodes on
// shards), chosen by the user or -- "auto" -- by timing both on the job's own links at start.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/comm/communicator.hpp"

namespace tessera {

enum class CollectiveTopology { kAuto, kFlat, kTwoLevel };

// "auto", "flat", "two-level"; throws SettingError("comm.collectives") naming the accepted values.
CollectiveTopology parse_collective_topology(const std::string& text);
const char* collective_topology_name(CollectiveTopology topology);

struct TopologyChoice {
  CollectiveTopology chosen = CollectiveTopology::kFlat;
  bool measured = false;  // auto timed both
  std::size_t probe_bytes = 0;
  double flat_seconds = 0, two_level_seconds = 0;  // one round of the probe, the slowest rank's
  // "two-level (inside each node, then across nodes): all-reduce, reduce-scatter and all-gather of
  //  13.6 MB in 120.3 ms against 230.1 ms flat"
  std::string describe() const;
};

// Collective over `flat` and `two_level` (the same ranks). kAuto times one round of all_reduce,
// reduce_scatter and all_gather of `probe_bytes` (f32) on each, after a warm-up round, and picks
// the faster by the slowest rank's time (every rank gets the same answer); the others are taken
// as given.
TopologyChoice choose_collective_topology(CollectiveTopology requested, Communicator& flat, Communicator& two_level,
                                          std::size_t probe_bytes);

}  // namespace tessera
