// RankInfo: who this rank is — its rank in the job, its place on its node, its node among the job's
// nodes, its host, and the GPU it drives. Everything above comm/ reads rank facts from here.
#pragma once

#include <string>

#include "tessera/comm/communicator.hpp"
#include "tessera/comm/node_layout.hpp"
#include "tessera/core/host_name.hpp"  // this_hostname
#include "tessera/launch/launcher_env.hpp"

namespace tessera {

struct RankInfo {
  int rank = 0;  // in the world communicator
  int world_size = 1;
  int local_rank = 0;  // among the ranks on this node, in rank order
  int local_size = 1;
  int node_rank = 0;  // index of this node, in order of each node's lowest rank
  int num_nodes = 1;
  std::string hostname;
  Launcher launcher = Launcher::kNone;  // kNone when the launcher's variables disagreed with MPI
  NodeLayout nodes;                     // every rank's node, and each node's host name (the same on every rank)

  bool is_root() const { return rank == 0; }
  // The GPU this rank drives among the `device_count` it sees: local_rank % device_count (which is
  // 0 when the launcher hands each rank its own GPU). -1 when there is no GPU.
  int device_index(int device_count) const;
  // "rank 1/4 (host node17): local 1/2, node 0/2, launched by mpirun"
  std::string describe() const;
};

// Collective over `world` (every rank calls it together). Rank and size come from `world`; nodes are
// grouped by the launcher's node id when every rank has a consistent one (Slurm), else by host
// name; local ranks follow from that grouping. The launcher's values are trusted only when every
// rank's launcher rank and size equal world's — a Slurm batch script's SLURM_PROCID=0 seen by an
// mpiexec launch is ignored.
RankInfo discover_rank_info(Communicator& world, const LauncherEnv& env);

}  // namespace tessera
