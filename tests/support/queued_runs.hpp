// QueuedRuns: the program runs of a test file's tests, queued when the suite starts and run in the
// background, kConcurrentRuns at a time, in the order queued; each test collects the results of its
// own runs (waiting for them if they have not ended) and checks them as before. The tests of such a
// file mostly wait on program start-ups, and no test's runs depend on another test's: queued
// together, the runs of later tests go on while earlier tests check theirs. A run that needs the
// output of another (a resume after the run that saved) is queued with it as one task.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/concurrent_runs.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

class QueuedRuns {
 public:
  using Task = std::function<std::vector<ProcessResult>()>;

  explicit QueuedRuns(int at_once = kConcurrentRuns) {
    for (int w = 0; w < at_once; ++w) workers_.emplace_back([this] { work(); });
  }
  ~QueuedRuns() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  QueuedRuns(const QueuedRuns&) = delete;
  QueuedRuns& operator=(const QueuedRuns&) = delete;

  // Queues `task` (runs one after another, their results in order) under `key`.
  void queue(const std::string& key, Task task) {
    std::packaged_task<std::vector<ProcessResult>()> packaged(std::move(task));
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!results_.emplace(key, packaged.get_future().share()).second) {
        throw std::invalid_argument("QueuedRuns: '" + key + "' queued twice");
      }
      queue_.push_back(std::move(packaged));
    }
    ready_.notify_one();
  }
  // Queues one command line (run_bounded, `seconds`) under `key`.
  void queue(const std::string& key, const std::string& command, int seconds = 120) {
    queue(key, [command, seconds] { return std::vector<ProcessResult>{run_bounded(command, seconds)}; });
  }

  // The results of the task queued under `key`, once it has ended.
  const std::vector<ProcessResult>& results(const std::string& key) const {
    std::shared_future<std::vector<ProcessResult>> result;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto at = results_.find(key);
      if (at == results_.end()) throw std::invalid_argument("QueuedRuns: nothing queued as '" + key + "'");
      result = at->second;
    }
    return result.get();
  }
  // The result of the one command queued under `key`.
  const ProcessResult& result(const std::string& key) const { return results(key).at(0); }

 private:
  void work() {
    for (;;) {
      std::packaged_task<std::vector<ProcessResult>()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return closing_ || !queue_.empty(); });
        if (closing_) return;  // the suite is over: what no test collected is not run
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<std::vector<ProcessResult>()>> queue_;
  std::map<std::string, std::shared_future<std::vector<ProcessResult>>> results_;
  bool closing_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::testing
