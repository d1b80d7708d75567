// Independent launches of one test at once: a program's start-up (the dynamic linker, MPI_Init,
// mpirun's daemons), a save and a process's exit mostly wait rather than compute, so commands that
// share nothing (their own directories, no lock in common) run side by side and the test checks each
// result afterwards, in the order it lists them, exactly as it would have one after the other.
// Commands that share a file or directory must not be run together.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/launch/child_job.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

// How many commands run_concurrently runs at once by default: enough to overlap start-ups on a
// 2-core machine without piling up compute.
constexpr int kConcurrentRuns = 4;

// Calls every task on a thread of its own and returns their results in the tasks' order (nothing,
// for tasks that return nothing), once all have returned. A task may use EXPECT_* (GoogleTest's
// assertions are thread-safe); a failed ASSERT_* ends that task only.
template <typename Task>
auto all_at_once(const std::vector<Task>& tasks) {
  using Result = std::invoke_result_t<const Task&>;
  std::vector<std::future<Result>> running;
  running.reserve(tasks.size());
  for (const Task& task : tasks) running.push_back(std::async(std::launch::async, std::cref(task)));
  if constexpr (std::is_void_v<Result>) {
    for (auto& result : running) result.get();
  } else {
    std::vector<Result> results;
    results.reserve(tasks.size());
    for (auto& result : running) results.push_back(result.get());
    return results;
  }
}

// Runs run(i) for every i in [0, count), at most `at_once` at a time (0: all at once).
inline void for_each_at_most(std::size_t count, std::size_t at_once, const std::function<void(std::size_t)>& run) {
  const std::size_t workers = at_once == 0 ? count : std::min(at_once, count);
  std::atomic<std::size_t> next{0};
  std::vector<std::function<void()>> tasks(workers, [&] {
    for (std::size_t i = next++; i < count; i = next++) run(i);
  });
  all_at_once(tasks);
}

// run_bounded (train_gpt_process.hpp) of every command, at most `at_once` at a time (0: all at
// once); result i is command i's. With `took`, also the seconds each command ran.
inline std::vector<ProcessResult> run_concurrently(const std::vector<std::string>& commands, int seconds = 120,
                                                   int at_once = kConcurrentRuns, std::vector<double>* took = nullptr) {
  std::vector<ProcessResult> results(commands.size());
  if (took != nullptr) took->assign(commands.size(), 0.0);
  for_each_at_most(commands.size(), static_cast<std::size_t>(std::max(0, at_once)), [&](std::size_t i) {
    const auto start = std::chrono::steady_clock::now();
    results[i] = run_bounded(commands[i], seconds);
    if (took != nullptr) (*took)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return results;
}

// run_bounded of every command at once; the results in the commands' order.
inline std::vector<ProcessResult> run_bounded_all(const std::vector<std::string>& commands, int seconds = 120) {
  return run_concurrently(commands, seconds, 0);
}

// run_child_job (tests/launch/child_job.hpp) of every command, `at_most` at a time (0: all at once);
// the results in the commands' order.
inline std::vector<ChildResult> run_child_jobs(const std::vector<std::string>& commands, int limit_seconds,
                                               std::size_t at_most = 0) {
  std::vector<ChildResult> results(commands.size());
  for_each_at_most(commands.size(), at_most,
                   [&](std::size_t i) { results[i] = run_child_job(commands[i], limit_seconds); });
  return results;
}

}  // namespace tessera::testing
