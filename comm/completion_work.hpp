// CompletionWork: a Work state that another thread completes (or fails) exactly once; wait() blocks
// the caller on a condition variable, without spinning. Used by backends that run collectives on a
// progress thread (the MPI backend).
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "comm/work.hpp"

namespace tessera::detail {

class CompletionWork final : public WorkState {
 public:
  void wait() override;
  bool is_completed() override { return done_.load(std::memory_order_acquire); }

  // Called once by the thread that ran the collective.
  void complete() noexcept;
  void fail(std::exception_ptr error) noexcept;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
};

}  // namespace tessera::detail
