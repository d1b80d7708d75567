// Whether every rank of MPI_COMM_WORLD has a GPU of its own (the GPUs of its node at least as many
// as the ranks there), for the multi-rank GPU tests to skip on every rank together, naming why.
#pragma once

#include <mpi.h>

#include <string>

#include "tessera/launch/rank_info.hpp"
#include "tessera/runtime/device_factory.hpp"

namespace tessera::testing {

// "" when every rank has one; else why this rank's node falls short (or that another rank's does).
// Collective over MPI_COMM_WORLD.
inline std::string why_not_one_gpu_per_rank(const RankInfo& info) {
  const int gpus = device_count(DeviceChoice::kCuda);
  int enough = gpus >= info.local_size ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&enough, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (everywhere) return "";
  return "needs one GPU per rank: rank " + std::to_string(info.rank) + " sees " + std::to_string(gpus) + " (" +
         (gpus == 0 ? device_unavailable_reason(DeviceChoice::kCuda) : "fewer than the ranks on its node") + ")";
}

}  // namespace tessera::testing
