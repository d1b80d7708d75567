// host_memory_budget: what this process may still allocate in host memory, read from Linux: the
// address-space and data-segment limits (RLIMIT_AS minus VmSize, RLIMIT_DATA minus VmData) for
// the process alone, and, shared by the node's processes, the smallest of /proc/meminfo's
// MemAvailable, the room under the cgroup memory limits from the process's own cgroup up to the
// root (v2 memory.max minus memory.current, or v1 memory.limit_in_bytes minus memory.usage_in_bytes)
// and a Slurm allocation (--mem: SLURM_MEM_PER_NODE; --mem-per-cpu: SLURM_MEM_PER_CPU times
// SLURM_CPUS_ON_NODE). The source names the limit that decided, its value and where it came from.
#pragma once

#include <string>

#include "tessera/runtime/memory_budget.hpp"

namespace tessera {

MemoryBudget host_memory_budget();

// This process's memory cgroup: its directory and the name of the limit file there (v2 when the
// process's cgroup has memory.max: "memory.max", else v1's "memory.limit_in_bytes"); an empty
// directory when neither is found.
struct MemoryCgroup {
  std::string dir;         // "/sys/fs/cgroup/<path>" (v2) or "/sys/fs/cgroup/memory/<path>" (v1)
  std::string limit_file;  // "memory.max" or "memory.limit_in_bytes"
};
MemoryCgroup memory_cgroup();

}  // namespace tessera
