// Work: the handle of one asynchronous operation, so it can overlap compute — a collective today,
// a file read or write or a device copy later. Whoever starts the operation returns a Work; the
// caller waits on it before using the result:
//   Work w = comm.reduce_scatter(grads, shard, DType::kBF16, ReduceOp::kSum);
//   ... compute ...
//   w.wait();  // the result is in `shard`; rethrows the operation's error, if any
// Copies share one state. Dropping a Work does not cancel or wait for the operation: the buffers it
// reads or writes must still stay alive until it has completed (wait() returned, or is_completed()
// said true). Handles may be waited in any order; waiting twice is fine.
#pragma once

#include <functional>
#include <memory>
#include <span>

namespace tessera {

namespace detail {

// What the producer of an operation implements behind a Work handle.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks until the operation has completed; throws its error (every call throws it again).
  virtual void wait() = 0;
  // True once the operation has completed, successfully or not. Never blocks.
  virtual bool is_completed() = 0;
};

}  // namespace detail

class Work {
 public:
  Work() = default;  // an operation with nothing to do: already completed
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // Returns once the result may be used. For an operation on host memory (an MPI collective) the
  // result is then in its output buffer. For one ordered on a device stream (an NCCL collective)
  // the stream the caller computes on is then ordered after it — work queued there afterwards sees
  // the result — and the host does not block.
  void wait() const {
    if (state_) state_->wait();
  }
  bool is_completed() const { return !state_ || state_->is_completed(); }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// Waits for every handle in order; the first error is rethrown after all have been waited for.
void wait_all(std::span<const Work> works);

// An operation in two steps: `first`, then — when the result is first waited for — the operation
// `next` starts, which the returned handle then waits for (a file read, then the collective that
// sends what was read). is_completed() is false until a wait has run `next`.
Work then(Work first, std::function<Work()> next);

}  // namespace tessera
