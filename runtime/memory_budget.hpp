// MemoryBudget: how much more memory a device can give this process, as the device knows it — a
// limit that applies to this process alone, and free memory shared with the other processes on the
// same node or GPU. The pre-flight memory check compares a run's predicted peak with it before
// anything is allocated. -1 means unknown or unlimited.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct MemoryBudget {
  std::int64_t process_bytes = -1;  // what this process alone may still allocate
  std::string process_source;       // "address-space limit (RLIMIT_AS) 2.00 GiB, 310.2 MiB in use"
  std::int64_t shared_bytes = -1;   // free memory shared by every process of the node (or GPU)
  std::string shared_source;        // "MemAvailable", "cgroup memory.max"

  // This process's share: the process limit, or the shared free memory split among `sharers`
  // processes, whichever is smaller; -1 when neither is known.
  std::int64_t share(int sharers) const;
  std::string describe(int sharers) const;  // which of the two decided, and how
};

}  // namespace tessera
