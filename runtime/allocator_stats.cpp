// AllocatorStats::describe.
#include "tessera/runtime/allocator_stats.hpp"

#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {

std::string AllocatorStats::describe() const {
  if (!known()) return "not kept";
  return "allocated " + format_bytes(allocated) + " (peak " + format_bytes(peak_allocated) + "), reserved " +
         format_bytes(reserved) + " (peak " + format_bytes(peak_reserved) + ")";
}

}  // namespace tessera
