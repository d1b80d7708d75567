// Host memory budget from /proc and the cgroup file system.
#include "tessera/runtime/cpu/host_memory_budget.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {
namespace {

// A "Key:   123 kB" line of a /proc file, in bytes; -1 when absent.
std::int64_t proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::int64_t kb = -1;
    fields >> kb;
    return kb < 0 ? -1 : kb * 1024;
  }
  return -1;
}

// A file holding one number ("max" and absent files read as -1).
std::int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}

// The cgroup v2 directory of this process ("/sys/fs/cgroup/<path>"), or "" when not on cgroup v2.
std::string cgroup2_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}

// Remaining cgroup memory (limit minus usage), -1 when unlimited or unknown.
std::int64_t cgroup_remaining() {
  if (const std::string dir = cgroup2_dir(); !dir.empty()) {
    const std::int64_t limit = read_number(dir + "/memory.max"), used = read_number(dir + "/memory.current");
    if (limit >= 0 && used >= 0) return limit - used;
  }
  const std::int64_t limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  const std::int64_t used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  if (limit >= 0 && used >= 0 && limit < (std::int64_t{1} << 60)) return limit - used;
  return -1;
}

// The room left under one resource limit: limit minus what the process already has, -1 if none.
void consider_limit(int resource, const char* name, const char* status_key, MemoryBudget& budget) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const std::int64_t used = std::max<std::int64_t>(0, proc_kb("/proc/self/status", status_key));
  const auto cap = static_cast<std::int64_t>(limit.rlim_cur);
  const std::int64_t room = std::max<std::int64_t>(0, cap - used);
  if (budget.process_bytes >= 0 && budget.process_bytes <= room) return;
  budget.process_bytes = room;
  budget.process_source = std::string(name) + " " + format_bytes(cap) + " with " + format_bytes(used) + " in use";
}

}  // namespace

MemoryBudget host_memory_budget() {
  MemoryBudget budget;
  consider_limit(RLIMIT_AS, "address-space limit (RLIMIT_AS)", "VmSize", budget);
  consider_limit(RLIMIT_DATA, "data-segment limit (RLIMIT_DATA)", "VmData", budget);
  const std::int64_t available = proc_kb("/proc/meminfo", "MemAvailable");
  const std::int64_t cgroup = cgroup_remaining();
  if (available >= 0) {
    budget.shared_bytes = available;
    budget.shared_source = "MemAvailable";
  }
  if (cgroup >= 0 && (budget.shared_bytes < 0 || cgroup < budget.shared_bytes)) {
    budget.shared_bytes = cgroup;
    budget.shared_source = "cgroup memory limit (remaining)";
  }
  return budget;
}

}  // namespace tessera
