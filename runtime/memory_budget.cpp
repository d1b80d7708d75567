// MemoryBudget: the smaller of a process limit and a share of shared free memory.
#include "tessera/runtime/memory_budget.hpp"

#include <algorithm>

#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {

std::int64_t MemoryBudget::share(int sharers) const {
  const std::int64_t shared = shared_bytes < 0 ? -1 : shared_bytes / std::max(1, sharers);
  if (process_bytes < 0) return shared;
  if (shared < 0) return process_bytes;
  return std::min(process_bytes, shared);
}

std::string MemoryBudget::describe(int sharers) const {
  const std::int64_t shared = shared_bytes < 0 ? -1 : shared_bytes / std::max(1, sharers);
  if (process_bytes >= 0 && (shared < 0 || process_bytes <= shared)) return process_source;
  if (shared < 0) return "unknown";
  std::string s = shared_source + " " + format_bytes(shared_bytes);
  if (sharers > 1) s += " shared by " + std::to_string(sharers) + " processes on this node";
  return s;
}

}  // namespace tessera
