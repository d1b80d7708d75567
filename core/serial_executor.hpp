// SerialExecutor: one thread that runs posted tasks one after another, in the order posted, so the
// poster never blocks on them and they complete in posting order. The MPI backend runs each
// communicator's collectives on one; file writes that must stay ordered can use one the same way.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tessera::detail {

class SerialExecutor {
 public:
  SerialExecutor();
  // Calls `cancel` of every task that has not started, waits for the running one, joins the thread.
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // `run` executes on the executor thread; `cancel` (noexcept in spirit) runs instead when the
  // executor is destroyed first. Exceptions escaping `run` are swallowed: tasks report their own.
  void post(std::function<void()> run, std::function<void()> cancel);

 private:
  struct Task {
    std::function<void()> run;
    std::function<void()> cancel;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera::detail
