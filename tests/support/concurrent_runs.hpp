// Independent launches of one test at once: a program's start-up (the dynamic linker, MPI_Init,
// mpirun's daemons), a save and a process's exit mostly wait, so commands that share nothing (their
// own directories, no lock in common) run side by side and the test checks each result afterwards,
// in the order it lists them, exactly as it would have one after the other.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/launch/child_job.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

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

// run_bounded (train_gpt_process.hpp) of every command at once; the results in the commands' order.
inline std::vector<ProcessResult> run_bounded_all(const std::vector<std::string>& commands, int seconds = 120) {
  std::vector<std::function<ProcessResult()>> tasks;
  for (const std::string& command : commands)
    tasks.push_back([&command, seconds] { return run_bounded(command, seconds); });
  return all_at_once(tasks);
}

// run_child_job (tests/launch/child_job.hpp) of every command, `at_most` at a time (0: all at once);
// the results in the commands' order.
inline std::vector<ChildResult> run_child_jobs(const std::vector<std::string>& commands, int limit_seconds,
                                               std::size_t at_most = 0) {
  std::vector<ChildResult> results(commands.size());
  const std::size_t workers = at_most == 0 ? commands.size() : std::min(at_most, commands.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::function<void()>> tasks(workers, [&] {
    for (std::size_t i = next++; i < commands.size(); i = next++)
      results[i] = run_child_job(commands[i], limit_seconds);
  });
  all_at_once(tasks);
  return results;
}

}  // namespace tessera::testing
