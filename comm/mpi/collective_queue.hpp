// CollectiveQueue: runs one communicator's collectives one at a time, in issue order — on its
// progress thread, so they overlap the caller's compute, or on the thread that waits for one the
// progress thread has not started yet. Issuing a collective wakes no thread: a caller that waits
// for it within ProgressTiming::start_delay runs it itself, as a blocking MPI call would, with no
// hand-off to the progress thread and no wake-up back (each a cross-core wake-up, which costs more
// than a small collective, on a virtual machine several times more). The progress thread instead
// looks at the queue every poll_interval while collectives keep coming, and starts what no caller
// has waited for, once it has left it start_delay; after `linger` without a new collective it
// sleeps until the next issue wakes it. So a collective issued to overlap compute starts at most
// about one poll interval plus start_delay late.
#pragma once

#include <mpi.h>

#include <chrono>
#include <exception>
#include <memory>
#include <thread>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/mpi/mpi_counters.hpp"
#include "tessera/core/work.hpp"

namespace tessera::detail {

// One collective as issued: what every rank must agree on, and this rank's buffers.
struct CollectiveTask {
  CollectiveCall call;
  const void* in = nullptr;   // reduce_scatter(_f32), all_gather: the input
  void* out = nullptr;        // the output; all_reduce(_f32), broadcast: the buffer
  int color = 0;              // split
  int key = 0;                // split
  MPI_Comm* child = nullptr;  // split: receives the new communicator
};

// What runs the tasks: the communicator. Both return the task's error, or null.
class CollectiveRunner {
 public:
  // `by_waiter`: the thread is a caller blocked in Work::wait(), not the progress thread.
  virtual std::exception_ptr run(const CollectiveTask& task, bool by_waiter) noexcept = 0;
  // The error of a task the queue was destroyed before running.
  virtual std::exception_ptr cancelled(const CollectiveTask& task) noexcept = 0;

 protected:
  ~CollectiveRunner() = default;
};

struct ProgressTiming {
  std::chrono::microseconds start_delay{50};      // a task first seen is left this long to a waiter
  std::chrono::microseconds poll_interval{1000};  // while collectives keep coming
  std::chrono::microseconds linger{20000};        // then sleep until the next issue
};

struct QueueCore;

class CollectiveQueue {
 public:
  // Starts the progress thread. `runner` and `counters` outlive the queue.
  CollectiveQueue(CollectiveRunner& runner, LiveMpiCounters& counters, ProgressTiming timing);
  // Tasks not started fail with runner.cancelled(); the one running is finished first.
  ~CollectiveQueue();
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  // Queues `task` behind the ones issued before; the Work completes when it has run.
  Work post(const CollectiveTask& task);

 private:
  std::shared_ptr<QueueCore> core_;  // shared with the Work handles, which may outlive the queue
  std::thread thread_;
};

}  // namespace tessera::detail
