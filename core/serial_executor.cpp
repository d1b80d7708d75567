// SerialExecutor: a FIFO of tasks drained by one thread.
#include "tessera/core/serial_executor.hpp"

#include <utility>

namespace tessera::detail {

SerialExecutor::SerialExecutor() {
  thread_ = std::thread([this] { loop(); });
}

SerialExecutor::~SerialExecutor() {
  std::deque<Task> cancelled;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    cancelled.swap(tasks_);
  }
  ready_.notify_all();
  for (Task& task : cancelled) {
    try {
      if (task.cancel) task.cancel();
    } catch (...) {
    }
  }
  thread_.join();
}

void SerialExecutor::post(std::function<void()> run, std::function<void()> cancel) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(Task{std::move(run), std::move(cancel)});
  }
  ready_.notify_one();
}

void SerialExecutor::loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (stop_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      task.run();
    } catch (...) {
    }
  }
}

}  // namespace tessera::detail
