// Host memory budget from /proc, the cgroup file system (v2 or v1, up the hierarchy) and a Slurm
// allocation.
#include "tessera/runtime/cpu/host_memory_budget.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
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

// The hierarchy of this process's memory cgroup: where the walk up stops and the usage file.
struct CgroupFiles {
  MemoryCgroup cgroup;
  std::string root, usage;
  const char* version = "";
};

CgroupFiles cgroup_files() {
  CgroupFiles files{memory_cgroup(), "", "", ""};
  if (files.cgroup.limit_file == "memory.max") {
    files.root = "/sys/fs/cgroup", files.usage = "memory.current", files.version = "v2";
  } else {
    files.root = "/sys/fs/cgroup/memory", files.usage = "memory.usage_in_bytes", files.version = "v1";
  }
  return files;
}

// The tightest cgroup memory limit on this process: limit minus usage at each level from its own
// cgroup up to the hierarchy's root (a parent's limit binds its children), the smallest room. -1
// when no level sets one. `source` names the limit, its file and the usage there.
std::int64_t cgroup_remaining(std::string& source) {
  const CgroupFiles files = cgroup_files();
  if (files.cgroup.dir.empty()) return -1;
  std::int64_t best = -1;
  for (std::string dir = files.cgroup.dir;;) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    const std::int64_t limit = read_number(dir + "/" + files.cgroup.limit_file);
    const std::int64_t used = read_number(dir + "/" + files.usage);
    // v1 writes "no limit" as a page-rounded 2^63 - 1.
    if (limit >= 0 && used >= 0 && limit < (std::int64_t{1} << 60) && (best < 0 || limit - used < best)) {
      best = std::max<std::int64_t>(0, limit - used);
      source = std::string("cgroup ") + files.version + " memory limit " + format_bytes(limit) + " (" + dir + "/" +
               files.cgroup.limit_file + ") with " + format_bytes(used) + " in use";
    }
    if (dir.size() <= files.root.size()) break;
    dir = dir.substr(0, dir.rfind('/'));
  }
  return best;
}

// The job's memory on this node from a Slurm allocation: --mem (SLURM_MEM_PER_NODE, MB) or
// --mem-per-cpu (SLURM_MEM_PER_CPU, MB) times the CPUs allocated on this node (SLURM_CPUS_ON_NODE).
// -1 outside Slurm or without either. `source` says which.
std::int64_t slurm_allocation(std::string& source) {
  const auto number = [](const char* name) -> std::int64_t {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return -1;
    char* end = nullptr;
    const long long v = std::strtoll(value, &end, 10);
    return end != nullptr && *end == '\0' && v > 0 ? v : -1;
  };
  constexpr std::int64_t kMb = std::int64_t{1} << 20;  // Slurm's memory unit, MB = MiB
  if (const std::int64_t mb = number("SLURM_MEM_PER_NODE"); mb > 0) {
    source = "Slurm allocation --mem " + std::to_string(mb) + "M per node (SLURM_MEM_PER_NODE)";
    return mb * kMb;
  }
  const std::int64_t per_cpu = number("SLURM_MEM_PER_CPU"), cpus = number("SLURM_CPUS_ON_NODE");
  if (per_cpu > 0 && cpus > 0) {
    source = "Slurm allocation --mem-per-cpu " + std::to_string(per_cpu) + "M x " + std::to_string(cpus) +
             " CPUs on this node (SLURM_MEM_PER_CPU, SLURM_CPUS_ON_NODE)";
    return per_cpu * cpus * kMb;
  }
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

MemoryCgroup memory_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  MemoryCgroup v1;
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const std::string path = line.substr(second + 1);
    if (controllers == ",," && std::ifstream("/sys/fs/cgroup" + path + "/memory.max").good()) {
      return {"/sys/fs/cgroup" + path, "memory.max"};
    }
    if (controllers.find(",memory,") != std::string::npos)
      v1 = {"/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes"};
  }
  return v1;
}

MemoryBudget host_memory_budget() {
  MemoryBudget budget;
  consider_limit(RLIMIT_AS, "address-space limit (RLIMIT_AS)", "VmSize", budget);
  consider_limit(RLIMIT_DATA, "data-segment limit (RLIMIT_DATA)", "VmData", budget);
  const auto consider_shared = [&budget](std::int64_t bytes, const std::string& source) {
    if (bytes < 0 || (budget.shared_bytes >= 0 && bytes >= budget.shared_bytes)) return;
    budget.shared_bytes = bytes;
    budget.shared_source = source;
  };
  consider_shared(proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable");
  std::string cgroup_source, slurm_source;
  const std::int64_t cgroup = cgroup_remaining(cgroup_source);
  consider_shared(cgroup, cgroup_source);
  const std::int64_t slurm = slurm_allocation(slurm_source);
  consider_shared(slurm, slurm_source);
  return budget;
}

}  // namespace tessera
