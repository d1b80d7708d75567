// Runs a command line (typically `mpirun ... <this test binary> --gtest_filter=...`) as a child job
// and collects its exit code and combined output, so tests can check behaviour that ends a job
// (MPI_Abort from the watchdog or from a failing rank) without ending the test itself.
// Child test cases run only when TESSERA_TEST_CHILD names them; otherwise they skip.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tessera::testing {

struct ChildResult {
  int exit_code = -1;
  bool timed_out = false;  // the child had to be killed: it hung
  std::string output;      // stdout and stderr
};

inline std::string self_executable() {
  std::array<char, 4096> path{};
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  return n > 0 ? std::string(path.data(), static_cast<std::size_t>(n)) : std::string();
}

// Runs `command` under `timeout` (coreutils) with a limit of `limit_seconds`.
inline ChildResult run_child_job(const std::string& command, int limit_seconds) {
  const std::string line = "timeout -k 5 " + std::to_string(limit_seconds) + " " + command + " 2>&1";
  ChildResult result;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed for: " + line;
    return result;
  }
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) result.output += chunk.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.timed_out = result.exit_code == 124 || result.exit_code == 137;
  return result;
}

// `mpirun --oversubscribe -np N -x TESSERA_TEST_CHILD=<child> [-x VAR=VALUE ...] <self> --gtest_filter=<filter>`
inline std::string mpirun_self(int ranks, const std::string& child, const std::string& filter,
                               const std::string& extra_env = "") {
  return "mpirun --oversubscribe -np " + std::to_string(ranks) + " -x TESSERA_TEST_CHILD=" + child + " " + extra_env +
         " " + self_executable() + " --gtest_filter=" + filter;
}

// True in the child job that `name` selects.
inline bool is_child(const char* name) {
  const char* selected = std::getenv("TESSERA_TEST_CHILD");
  return selected != nullptr && std::string(selected) == name;
}

}  // namespace tessera::testing
