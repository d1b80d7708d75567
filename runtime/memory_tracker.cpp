// MemoryTracker bookkeeping and the memory_summary() table.
#include "tessera/runtime/memory_tracker.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tessera {

const char* memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters: return "parameters";
    case MemoryCategory::kGradients: return "gradients";
    case MemoryCategory::kOptimizerState: return "optimizer state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommBuffers: return "comm buffers";
    case MemoryCategory::kWorkspace: return "workspace";
  }
  return "?";
}

void MemoryTracker::on_allocate(MemoryCategory category, std::size_t bytes) {
  const auto i = static_cast<int>(category);
  std::lock_guard lock(mutex_);
  state_.current[i] += static_cast<std::int64_t>(bytes);
  state_.peak[i] = std::max(state_.peak[i], state_.current[i]);
  state_.current_total += static_cast<std::int64_t>(bytes);
  state_.peak_total = std::max(state_.peak_total, state_.current_total);
}

void MemoryTracker::on_free(MemoryCategory category, std::size_t bytes) {
  const auto i = static_cast<int>(category);
  std::lock_guard lock(mutex_);
  state_.current[i] -= static_cast<std::int64_t>(bytes);
  state_.current_total -= static_cast<std::int64_t>(bytes);
}

MemorySnapshot MemoryTracker::snapshot() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::int64_t MemoryTracker::current(MemoryCategory category) const { return snapshot().current_of(category); }
std::int64_t MemoryTracker::peak(MemoryCategory category) const { return snapshot().peak_of(category); }
std::int64_t MemoryTracker::current_total() const { return snapshot().current_total; }
std::int64_t MemoryTracker::peak_total() const { return snapshot().peak_total; }

void MemoryTracker::reset_peaks() {
  std::lock_guard lock(mutex_);
  state_.peak = state_.current;
  state_.peak_total = state_.current_total;
}

std::string format_bytes(std::int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (std::llabs(bytes) >= (1LL << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1LL << 30));
  } else if (std::llabs(bytes) >= (1LL << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1LL << 20));
  } else if (std::llabs(bytes) >= (1LL << 10)) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / (1LL << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string memory_summary(const MemoryTracker& tracker) { return memory_summary(tracker.snapshot()); }

std::string memory_summary(const MemorySnapshot& s) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %14s %14s %16s\n", "category", "current", "peak", "peak bytes");
  out += line;
  for (MemoryCategory c : kAllMemoryCategories) {
    std::snprintf(line, sizeof line, "%-16s %14s %14s %16lld\n", memory_category_name(c),
                  format_bytes(s.current_of(c)).c_str(), format_bytes(s.peak_of(c)).c_str(),
                  static_cast<long long>(s.peak_of(c)));
    out += line;
  }
  std::snprintf(line, sizeof line, "%-16s %14s %14s %16lld\n", "total", format_bytes(s.current_total).c_str(),
                format_bytes(s.peak_total).c_str(), static_cast<long long>(s.peak_total));
  out += line;
  return out;
}

}  // namespace tessera
