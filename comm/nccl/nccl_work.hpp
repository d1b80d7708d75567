// NcclWork: the Work state of an NCCL collective — a CUDA event recorded on the communication
// stream right after the collective. wait() makes the caller's compute stream wait for the event
// (cudaStreamWaitEvent: the host does not block), so work queued there afterwards sees the result;
// is_completed() queries the event.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "tessera/core/work.hpp"
#include "tessera/runtime/cuda/cuda_event_work.hpp"

namespace tessera::detail {

class NcclWork final : public WorkState {
 public:
  NcclWork(std::shared_ptr<CudaEventWork> done, cudaStream_t compute_stream)
      : done_(std::move(done)), compute_stream_(compute_stream) {}

  void wait() override;
  bool is_completed() override { return done_->is_completed(); }
  const CudaEventWork& done() const { return *done_; }

 private:
  std::shared_ptr<CudaEventWork> done_;
  cudaStream_t compute_stream_;
};

}  // namespace tessera::detail
