// host_memory_budget: the limits a container or a batch system sets.
//  * A Slurm allocation (--mem: SLURM_MEM_PER_NODE; --mem-per-cpu: SLURM_MEM_PER_CPU x
//    SLURM_CPUS_ON_NODE) caps the node's shared memory, named with where it came from.
//  * A cgroup memory limit (v2 memory.max or v1 memory.limit_in_bytes) on a child cgroup this test
//    makes under its own, with a process moved into it: the budget is at most the limit and names it
//    and its file. Where the machine does not let the test make a cgroup with a limit, it skips,
//    saying why; the cgroup is removed afterwards (and stale ones of killed runs at the start).
#include "tessera/runtime/cpu/host_memory_budget.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/support/child_cgroup.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

class SlurmEnvironment {
 public:
  ~SlurmEnvironment() {
    for (const char* name : {"SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_CPUS_ON_NODE"}) unsetenv(name);
  }
};

TEST(HostMemoryBudget, ASlurmAllocationCapsTheNodesMemory) {
  SlurmEnvironment restore;
  setenv("SLURM_MEM_PER_NODE", "64", 1);
  MemoryBudget b = host_memory_budget();
  EXPECT_LE(b.shared_bytes, 64 * kMiB);
  EXPECT_NE(b.shared_source.find("SLURM_MEM_PER_NODE"), std::string::npos) << b.shared_source;
  EXPECT_NE(b.shared_source.find("--mem 64M"), std::string::npos) << b.shared_source;
  unsetenv("SLURM_MEM_PER_NODE");
  setenv("SLURM_MEM_PER_CPU", "16", 1);
  setenv("SLURM_CPUS_ON_NODE", "2", 1);
  b = host_memory_budget();
  EXPECT_EQ(b.shared_bytes, 32 * kMiB) << b.shared_source;
  EXPECT_NE(b.shared_source.find("--mem-per-cpu 16M x 2 CPUs"), std::string::npos) << b.shared_source;
  setenv("SLURM_MEM_PER_CPU", "lots", 1);  // not a number: no allocation read from it
  b = host_memory_budget();
  EXPECT_EQ(b.shared_source.find("Slurm"), std::string::npos) << b.shared_source;
}

TEST(HostMemoryBudget, ACgroupLimitIsTheBudgetAndNamesItsFile) {
  const std::int64_t limit = 48 * kMiB;
  const testing::ChildCgroup child("tessera_budget_", limit);
  if (!child.why_not().empty()) GTEST_SKIP() << child.why_not();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the child: into the cgroup, then its budget through the pipe
    close(fds[0]);
    std::string report = "not moved";
    if (child.join()) {
      const MemoryBudget b = host_memory_budget();
      report = std::to_string(b.shared_bytes) + "\n" + b.shared_source;
    }
    const ssize_t written = write(fds[1], report.data(), report.size());
    _exit(written == static_cast<ssize_t>(report.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string report;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) report.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << report;
  if (report == "not moved") GTEST_SKIP() << "cannot move a process into " << child.dir();
  std::istringstream lines(report);
  std::int64_t shared = -1;
  std::string source;
  lines >> shared;
  std::getline(lines >> std::ws, source);
  EXPECT_GE(shared, 0) << source;
  EXPECT_LE(shared, limit) << source;
  EXPECT_NE(source.find("cgroup"), std::string::npos) << source;
  EXPECT_NE(source.find("48.00 MiB"), std::string::npos) << source;
  EXPECT_NE(source.find(child.limit_path()), std::string::npos) << source;
}

}  // namespace
}  // namespace tessera
