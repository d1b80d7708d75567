// ChildCgroup: a memory cgroup a test makes under its own process's (memory_cgroup(): v2 or v1), named
// <prefix><pid>, with a memory limit, for running a process under the limits a container sets. The
// destructor removes it (it must be empty by then); children a killed earlier run left with the same
// prefix are removed, when empty, before making it. Where the machine does not allow it, why_not()
// says why, for the test to skip with.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "tessera/runtime/cpu/host_memory_budget.hpp"

namespace tessera::testing {

class ChildCgroup {
 public:
  ChildCgroup(const std::string& prefix, std::int64_t limit_bytes) {
    const MemoryCgroup own = memory_cgroup();
    if (own.dir.empty()) {
      why_not_ = "no memory cgroup for this process";
      return;
    }
    if (DIR* d = opendir(own.dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        if (std::string(e->d_name).rfind(prefix, 0) == 0) rmdir((own.dir + "/" + e->d_name).c_str());
      }
      closedir(d);
    }
    dir_ = own.dir + "/" + prefix + std::to_string(getpid());
    if (mkdir(dir_.c_str(), 0755) != 0) {
      why_not_ = "cannot make a cgroup under " + own.dir;
      dir_.clear();
      return;
    }
    limit_path_ = dir_ + "/" + own.limit_file;
    if (!write(limit_path_, std::to_string(limit_bytes))) why_not_ = "cannot set " + limit_path_;
  }
  ~ChildCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  ChildCgroup(const ChildCgroup&) = delete;
  ChildCgroup& operator=(const ChildCgroup&) = delete;

  const std::string& why_not() const { return why_not_; }  // "" when made with its limit
  const std::string& dir() const { return dir_; }
  const std::string& limit_path() const { return limit_path_; }  // the limit file the library names
  // Moves the calling process into the cgroup; false when it could not.
  bool join() const { return write(dir_ + "/cgroup.procs", "0"); }

  static bool write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

 private:
  std::string dir_, limit_path_, why_not_;
};

}  // namespace tessera::testing
