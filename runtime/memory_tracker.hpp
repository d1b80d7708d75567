// MemoryTracker: exact current and peak bytes per MemoryCategory and in total, for one device.
// Every Storage reports to the tracker of the Device it lives on. Thread-safe (an async checkpoint
// writer frees buffers from its own thread).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "tessera/runtime/memory_category.hpp"

namespace tessera {

struct MemorySnapshot {
  std::array<std::int64_t, kMemoryCategoryCount> current{};  // bytes now, by category
  std::array<std::int64_t, kMemoryCategoryCount> peak{};     // highest bytes since reset, by category
  std::int64_t current_total = 0;
  std::int64_t peak_total = 0;  // highest simultaneous total (not the sum of category peaks)

  std::int64_t current_of(MemoryCategory c) const { return current[static_cast<int>(c)]; }
  std::int64_t peak_of(MemoryCategory c) const { return peak[static_cast<int>(c)]; }
};

class MemoryTracker {
 public:
  void on_allocate(MemoryCategory category, std::size_t bytes);
  void on_free(MemoryCategory category, std::size_t bytes);

  MemorySnapshot snapshot() const;
  std::int64_t current(MemoryCategory category) const;
  std::int64_t peak(MemoryCategory category) const;
  std::int64_t current_total() const;
  std::int64_t peak_total() const;

  // Sets every peak to the current value (start of a measured phase).
  void reset_peaks();

 private:
  mutable std::mutex mutex_;
  MemorySnapshot state_;
};

// A table of current and peak bytes per category plus the total, in MiB and bytes.
std::string memory_summary(const MemoryTracker& tracker);
std::string memory_summary(const MemorySnapshot& snapshot);
std::string format_bytes(std::int64_t bytes);  // "12.50 MiB"

}  // namespace tessera
