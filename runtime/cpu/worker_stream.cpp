// WorkerStream: every operation is one task on a SerialExecutor; events are CompletionWork states
// the worker completes (or fails with the stream's failure) when it reaches them.
#include "tessera/runtime/cpu/worker_stream.hpp"

#include <memory>
#include <stdexcept>

#include "tessera/core/completion_work.hpp"

namespace tessera {

WorkerStream::~WorkerStream() {
  try {
    record().synchronize();
  } catch (...) {
  }
}

Event WorkerStream::record() {
  auto state = std::make_shared<detail::CompletionWork>();
  executor_.post(
      [this, state] {
        if (std::exception_ptr e = error()) {
          state->fail(e);
        } else {
          state->complete();
        }
      },
      [state] {
        state->fail(
            std::make_exception_ptr(std::runtime_error("the stream was destroyed before it reached this event")));
      });
  return Event(std::move(state));
}

void WorkerStream::wait(const Event& event) {
  if (!event.state()) return;  // a default-constructed event is complete
  executor_.post(
      [this, event] {
        try {
          event.synchronize();
        } catch (...) {
          fail(std::current_exception());
        }
      },
      {});
}

void WorkerStream::launch_host_function(std::function<void()> fn) {
  executor_.post(
      [this, fn = std::move(fn)] {
        try {
          fn();
        } catch (...) {
          fail(std::current_exception());
        }
      },
      {});
}

void WorkerStream::synchronize() { record().synchronize(); }

void WorkerStream::fail(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = std::move(error);
}

std::exception_ptr WorkerStream::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace tessera
