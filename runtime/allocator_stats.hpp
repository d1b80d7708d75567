// AllocatorStats: what a device's allocator holds for one memory kind, beside the MemoryTracker's
// exact bytes per category (which Storage reports). A caching allocator hands blocks out of memory
// it reserved from the driver and keeps them when they are given back, so
//   allocated      bytes in blocks handed out and not yet reusable (size rounding included, and
//                  blocks given back that a stream may still use)
//   reserved       bytes taken from the driver: allocated + cached free blocks
// plus the peak of each since the device was made. -1 means the device keeps no such figure (the
// CPU and meta devices: every block goes straight back to the C library, or there is none).
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct AllocatorStats {
  std::int64_t allocated = -1;
  std::int64_t peak_allocated = -1;
  std::int64_t reserved = -1;
  std::int64_t peak_reserved = -1;

  bool known() const { return reserved >= 0; }
  // "allocated 1.20 GiB (peak 2.00 GiB), reserved 2.50 GiB (peak 3.00 GiB)", or "not kept".
  std::string describe() const;
};

}  // namespace tessera
