// MemorySpace: what a pointer points into. A Device allocates in one space and a Communicator's
// spans must point into one; the sharding engine refuses a communicator whose space is not its
// device's (an MPI communicator cannot reduce GPU memory, NCCL cannot reduce host memory).
//   kHost  ordinary (or pinned) host memory: the CPU device, MPI
//   kGpu   memory of the process's GPU: the CUDA device, NCCL
//   kMeta  no memory at all: the meta device and the loopback communicator, which track sizes
//          and order only (the memory planner runs the real engine on them)
#pragma once

#include <cstdint>

namespace tessera {

enum class MemorySpace : std::uint8_t { kHost, kGpu, kMeta };

constexpr const char* memory_space_name(MemorySpace space) {
  switch (space) {
    case MemorySpace::kHost: return "host";
    case MemorySpace::kGpu: return "gpu";
    case MemorySpace::kMeta: return "meta";
  }
  return "unknown";
}

}  // namespace tessera
