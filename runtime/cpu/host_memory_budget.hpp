// host_memory_budget: what this process may still allocate in host memory, read from Linux: the
// address-space and data-segment limits (RLIMIT_AS minus VmSize, RLIMIT_DATA minus VmData) for
// the process alone, and the smaller of /proc/meminfo's MemAvailable and the cgroup's remaining
// memory (memory.max minus memory.current, v2 or v1) shared by the node's processes.
#pragma once

#include "tessera/runtime/memory_budget.hpp"

namespace tessera {

MemoryBudget host_memory_budget();

}  // namespace tessera
