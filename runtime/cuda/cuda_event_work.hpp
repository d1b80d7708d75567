// CudaEventWork: the state behind an Event (runtime/event.hpp) or a collective's Work that is a
// CUDA event — recorded on one stream of one GPU. is_completed() queries the event (never blocks);
// wait() blocks the host until it completed (cudaEventSynchronize) and rethrows the failure of the
// stream it was recorded on, when a host function queued there before it threw (StreamFailure).
// A stream of the same process waits on it without blocking the host through enqueue_wait().
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <exception>
#include <memory>

#include "tessera/core/work.hpp"
#include "tessera/runtime/stream_failure.hpp"

namespace tessera::detail {

class CudaEventWork final : public WorkState {
 public:
  // Takes ownership of `event`, already recorded on a stream of GPU `device`. `failure` is that
  // stream's record (null: the stream runs no host functions) and `position` its issued() at the
  // moment of recording.
  CudaEventWork(int device, cudaEvent_t event, std::shared_ptr<const StreamFailure> failure = {},
                std::uint64_t position = 0);
  ~CudaEventWork() override;  // destroys the event; never throws
  CudaEventWork(const CudaEventWork&) = delete;
  CudaEventWork& operator=(const CudaEventWork&) = delete;

  // Blocks the host; throws the CUDA error (call, file:line, decoded) or the stream's failure.
  void wait() override;
  // True once the event completed, or when querying it fails (wait() then throws the error).
  bool is_completed() override;

  int device() const { return device_; }
  // Work queued on `stream` (any GPU of this process) afterwards starts after the event. Does not
  // block the host and does not carry the failure: see failure() / may_fail().
  void enqueue_wait(cudaStream_t stream) const;
  // The recording stream's failure at or before this event, as far as known now.
  std::exception_ptr failure() const;
  // False when the event certainly completes without a failure (no host function before it threw
  // or is still to run).
  bool may_fail() const;
  // The recording stream's failure record (may be null) and its issued() when this was recorded.
  const std::shared_ptr<const StreamFailure>& failure_record() const { return failure_; }
  std::uint64_t position() const { return position_; }

 private:
  int device_;
  cudaEvent_t event_;
  std::shared_ptr<const StreamFailure> failure_;
  std::uint64_t position_;
};

}  // namespace tessera::detail
