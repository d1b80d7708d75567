// InlineStream: work runs when issued; only a failure needs remembering.
#include "tessera/runtime/inline_stream.hpp"

namespace tessera {

Event InlineStream::record() {
  std::lock_guard lock(mutex_);
  return error_ ? failed_event(error_) : Event();
}

void InlineStream::wait(const Event& event) {
  try {
    event.synchronize();
  } catch (...) {
    fail(std::current_exception());
  }
}

void InlineStream::launch_host_function(std::function<void()> fn) {
  try {
    fn();
  } catch (...) {
    fail(std::current_exception());
  }
}

void InlineStream::synchronize() {
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

void InlineStream::fail(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = std::move(error);
}

}  // namespace tessera
