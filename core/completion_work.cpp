// CompletionWork: completed by the thread that ran the operation, awaited by the caller.
#include "tessera/core/completion_work.hpp"

namespace tessera::detail {

void CompletionWork::wait() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return done_.load(std::memory_order_acquire); });
  if (error_) std::rethrow_exception(error_);
}

void CompletionWork::complete() noexcept {
  {
    std::lock_guard lock(mutex_);
    done_.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

void CompletionWork::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

}  // namespace tessera::detail
