// CompletionWork: a Work state that another thread completes (or fails) exactly once; wait() blocks
// the caller on a condition variable, without spinning. For operations that run on a thread of
// their own (the MPI backend's progress thread, a file writer), or that fail before they start.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "tessera/core/work.hpp"

namespace tessera::detail {

class CompletionWork final : public WorkState {
 public:
  void wait() override;
  bool is_completed() override { return done_.load(std::memory_order_acquire); }

  // Called once by the thread that ran the operation.
  void complete() noexcept;
  void fail(std::exception_ptr error) noexcept;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
};

}  // namespace tessera::detail
