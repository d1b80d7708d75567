// CollectiveQueue: a FIFO of tasks with one runner at a time — the progress thread, polling while
// collectives come and asleep otherwise, or a thread in Work::wait() whose task has not started
// (it runs the tasks ahead of its own, then its own). Issuing reads no clock and wakes no thread.
#include "tessera/comm/mpi/collective_queue.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

namespace tessera::detail {
namespace {

class QueuedWork;

struct Entry {
  CollectiveTask task;
  std::shared_ptr<QueuedWork> work;
  std::uint64_t number = 0;  // 1, 2, ... in issue order
};

// A waiter whose collective runs on the progress thread polls for this long (yielding the core)
// before it sleeps: a small collective ends within it, and a sleep costs a wake-up.
constexpr std::chrono::microseconds kWaitPolling{50};

}  // namespace

struct QueueCore {
  std::mutex mutex;
  std::condition_variable ready;  // the progress thread: a task to run, or closing
  std::condition_variable idle;   // the destructor: no thread runs tasks any more
  std::deque<Entry> tasks;        // not started, in issue order
  std::uint64_t issued = 0;       // tasks issued so far
  // A thread is running tasks. Set under the mutex; a waiter that has run its own task clears it
  // without taking the mutex again (see run_here_if_not_started).
  std::atomic<bool> running{false};
  std::atomic<bool> closed{false};  // the queue is being destroyed: no task starts any more
  bool deep_sleep = false;          // the progress thread sleeps until notified; only when idle
  ProgressTiming timing;
  CollectiveRunner* runner = nullptr;
  LiveMpiCounters* counters = nullptr;

  // Pops the first task and runs it with the lock released; returns without the lock. Caller holds
  // `lock` and has set `running`.
  void run_first(std::unique_lock<std::mutex>& lock, bool by_waiter);
};

namespace {

// Completion is an atomic flag: a waiter that runs its collective itself, the common case, takes no
// lock and makes no system call for it.
class QueuedWork final : public WorkState {
 public:
  explicit QueuedWork(std::shared_ptr<QueueCore> core) : core_(std::move(core)) {}

  void wait() override {
    if (!is_completed()) {
      run_here_if_not_started();
      block_until_done();
    }
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override { return done_.load(std::memory_order_acquire) != 0; }

  void finish(std::exception_ptr error) noexcept {
    error_ = std::move(error);
    done_.store(1, std::memory_order_release);
    done_.notify_all();
  }

  bool started = false;  // guarded by the core's mutex: a thread has taken the task off the queue

 private:
  // When no thread runs tasks, runs the ones issued before this one and then this one, here.
  void run_here_if_not_started() {
    QueueCore& core = *core_;
    std::unique_lock lock(core.mutex);
    if (started || core.running.load() || core.closed.load()) return;
    core.running.store(true);
    for (;;) {
      if (core.tasks.empty()) {  // this task was cancelled: the queue is closing
        core.running.store(false);
        core.idle.notify_all();
        return;
      }
      const bool mine = core.tasks.front().work.get() == this;
      LiveMpiCounters::bump(core.counters->run_by_waiter);
      core.run_first(lock, true);  // returns with the lock released
      if (mine) break;
      lock.lock();
    }
    // Tasks issued meanwhile are the progress thread's: it polls while any thread runs tasks (it
    // sleeps only when idle), so it needs no wake-up; the destructor may wait for this thread.
    core.running.store(false);
    if (core.closed.load()) {
      std::lock_guard relock(core.mutex);
      core.idle.notify_all();
    }
  }

  void block_until_done() {
    if (is_completed()) return;  // it ran here
    const auto until = std::chrono::steady_clock::now() + kWaitPolling;
    while (!is_completed() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    while (!is_completed()) done_.wait(0, std::memory_order_acquire);
  }

  std::shared_ptr<QueueCore> core_;
  std::atomic<std::uint32_t> done_{0};
  std::exception_ptr error_;  // written before done_ is set, read after
};

}  // namespace

void QueueCore::run_first(std::unique_lock<std::mutex>& lock, bool by_waiter) {
  Entry entry = std::move(tasks.front());
  tasks.pop_front();
  entry.work->started = true;
  lock.unlock();
  entry.work->finish(runner->run(entry.task, by_waiter));
}

namespace {

void progress_loop(QueueCore& core) {
  std::unique_lock lock(core.mutex);
  const auto linger_polls = core.timing.linger / std::max(core.timing.poll_interval, std::chrono::microseconds(1));
  std::uint64_t left_to_waiter = 0;  // the task given start_delay for a waiter to claim
  std::uint64_t seen_issued = core.issued;
  long quiet_polls = 0;  // polls in a row that found no new task
  while (!core.closed.load()) {
    const bool idle = !core.running.load();
    if (!core.tasks.empty() && idle) {
      const std::uint64_t first = core.tasks.front().number;
      if (first != left_to_waiter) {
        // A caller that waits for the task at once runs it itself: leave it that long.
        left_to_waiter = first;
        core.ready.wait_for(lock, core.timing.start_delay);
        continue;
      }
      core.running.store(true);
      while (!core.tasks.empty() && !core.closed.load()) {
        core.run_first(lock, false);
        lock.lock();
      }
      core.running.store(false);
      if (core.closed.load()) core.idle.notify_all();
      continue;
    }
    if (core.issued != seen_issued) {
      seen_issued = core.issued;
      quiet_polls = 0;
    }
    if (quiet_polls < linger_polls || !idle || !core.tasks.empty()) {
      // Collectives come in bursts: look again soon, so issuing one need not wake this thread.
      ++quiet_polls;
      core.ready.wait_for(lock, core.timing.poll_interval);
    } else {
      core.deep_sleep = true;  // the next issue wakes this thread
      core.ready.wait(lock);
      core.deep_sleep = false;
      quiet_polls = 0;
    }
  }
}

}  // namespace

CollectiveQueue::CollectiveQueue(CollectiveRunner& runner, LiveMpiCounters& counters, ProgressTiming timing)
    : core_(std::make_shared<QueueCore>()) {
  core_->timing = timing;
  core_->runner = &runner;
  core_->counters = &counters;
  thread_ = std::thread([core = core_.get()] { progress_loop(*core); });
}

CollectiveQueue::~CollectiveQueue() {
  std::deque<Entry> cancelled;
  {
    std::lock_guard lock(core_->mutex);
    core_->closed.store(true);
    cancelled.swap(core_->tasks);
  }
  core_->ready.notify_all();
  for (Entry& entry : cancelled) entry.work->finish(core_->runner->cancelled(entry.task));
  thread_.join();  // after the task it runs, if any
  std::unique_lock lock(core_->mutex);
  core_->idle.wait(lock, [this] { return !core_->running.load(); });  // a waiter running tasks here
}

Work CollectiveQueue::post(const CollectiveTask& task) {
  auto work = std::make_shared<QueuedWork>(core_);
  bool wake = false;
  {
    std::lock_guard lock(core_->mutex);
    core_->tasks.push_back(Entry{task, work, ++core_->issued});
    // The progress thread sleeps only when no thread runs tasks; otherwise it looks again within a
    // poll interval.
    wake = core_->deep_sleep;
  }
  if (wake) core_->ready.notify_one();
  return Work(std::move(work));
}

}  // namespace tessera::detail
