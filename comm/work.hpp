// Work: the handle of one asynchronous collective, so communication can overlap compute.
//   Work w = comm.reduce_scatter(grads, shard, DType::kBF16, ReduceOp::kSum);
//   ... compute ...
//   w.wait();  // the result is in `shard`; rethrows the collective's error, if any
// Copies share one state. Dropping a Work does not cancel or wait for the collective: the buffers
// must still stay alive until it has completed (wait() returned, or is_completed() said true).
// Handles may be waited in any order; waiting twice is fine.
#pragma once

#include <memory>
#include <span>

namespace tessera {

namespace detail {

// What a backend implements behind a Work handle.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks until the collective has completed; throws its error (every call throws it again).
  virtual void wait() = 0;
  // True once the collective has completed, successfully or not. Never blocks.
  virtual bool is_completed() = 0;
};

}  // namespace detail

class Work {
 public:
  Work() = default;  // a collective with nothing to do: already completed
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // MPI backend: returns when the result is in the output buffer (host memory).
  // NCCL backend: returns once the communicator's compute stream is ordered after the collective
  // (work queued on that stream afterwards sees the result); the host does not block.
  void wait() const {
    if (state_) state_->wait();
  }
  bool is_completed() const { return !state_ || state_->is_completed(); }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// Waits for every handle in order; the first error is rethrown after all have been waited for.
void wait_all(std::span<const Work> works);

}  // namespace tessera
