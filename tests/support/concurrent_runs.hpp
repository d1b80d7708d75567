// Independent command lines run at the same time, each as run_bounded runs it (under a time bound,
// stdout and stderr captured), their results in the order given. The tests that start programs
// (train_gpt, tessera_generate, ...) mostly wait on each start (MPI's start-up, a fresh process's
// loading) rather than compute: runs that do not depend on each other's output overlap those waits.
// Commands that share a file or directory must not be run together.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

// How many commands run at once by default: enough to overlap start-ups on a 2-core machine
// without piling up compute.
constexpr int kConcurrentRuns = 4;

// Runs every command, at most `at_once` at a time; result i is command i's. With `took`, also the
// seconds each command ran, from its start to its end.
inline std::vector<ProcessResult> run_concurrently(const std::vector<std::string>& commands, int seconds = 120,
                                                   int at_once = kConcurrentRuns, std::vector<double>* took = nullptr) {
  std::vector<ProcessResult> results(commands.size());
  if (took != nullptr) took->assign(commands.size(), 0.0);
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < commands.size(); i = next++) {
      const auto start = std::chrono::steady_clock::now();
      results[i] = run_bounded(commands[i], seconds);
      if (took != nullptr) (*took)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  };
  std::vector<std::thread> workers;
  const std::size_t count = std::min(commands.size(), static_cast<std::size_t>(std::max(1, at_once)));
  for (std::size_t w = 0; w < count; ++w) workers.emplace_back(worker);
  for (std::thread& t : workers) t.join();
  return results;
}

}  // namespace tessera::testing
