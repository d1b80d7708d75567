// StreamFailure: positions, the lowest failing one, and how far the host functions have run.
#include "tessera/runtime/stream_failure.hpp"

#include <algorithm>

namespace tessera {

std::uint64_t StreamFailure::issue() {
  std::lock_guard lock(mutex_);
  return ++issued_;
}

std::uint64_t StreamFailure::issued() const {
  std::lock_guard lock(mutex_);
  return issued_;
}

void StreamFailure::fail(std::uint64_t position, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_ || position < failed_at_) {
    error_ = std::move(error);
    failed_at_ = position;
  }
}

void StreamFailure::done(std::uint64_t position) {
  std::lock_guard lock(mutex_);
  done_ = std::max(done_, position);
}

std::exception_ptr StreamFailure::through(std::uint64_t position) const {
  std::lock_guard lock(mutex_);
  return error_ && failed_at_ <= position ? error_ : nullptr;
}

std::exception_ptr StreamFailure::first() const {
  std::lock_guard lock(mutex_);
  return error_;
}

bool StreamFailure::unsettled_through(std::uint64_t position) const {
  std::lock_guard lock(mutex_);
  return done_ < std::min(position, issued_);
}

}  // namespace tessera
