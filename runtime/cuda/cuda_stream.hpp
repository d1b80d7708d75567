// CudaStream: a Stream (runtime/stream.hpp) that is a non-blocking cudaStream_t of one GPU.
//   record()                an Event whose state is a CUDA event (CudaEventWork)
//   wait(event)             cudaStreamWaitEvent for CUDA events (the host does not block); any other
//                           event (a CPU stream's, a failed one) is waited for on the host first
//   launch_host_function    cudaLaunchHostFunc; a throwing function fails the stream: later work
//                           still runs, events recorded after it complete with the failure and
//                           synchronize() rethrows it (StreamFailure). As CUDA requires, the function
//                           must not call CUDA itself; what it captures is destroyed later on a
//                           caller's thread (a captured Tensor may free device memory), not inside
//                           the callback.
//   synchronize()           cudaStreamSynchronize, then the stream's failure
// CUDA errors (a failed launch, a kernel fault reported by a synchronization) throw at the call with
// the call text, file:line, the decoded error and the GPU. Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <mutex>

#include "tessera/runtime/stream.hpp"
#include "tessera/runtime/stream_failure.hpp"

namespace tessera {

class CudaStream final : public Stream {
 public:
  // Creates the stream on GPU `device` (cudaStreamNonBlocking: no implicit order with stream 0).
  CudaStream(int device, StreamRole role);
  // Waits for the work queued on it (errors ignored), then destroys it. Never throws.
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  StreamRole role() const override { return role_; }
  Event record() override;
  void wait(const Event& event) override;
  void launch_host_function(std::function<void()> fn) override;
  void synchronize() override;

  cudaStream_t handle() const { return stream_; }
  int device() const { return device_; }
  // The stream's first failure so far (a host function that threw), or null.
  std::exception_ptr failure() const { return failure_->first(); }

  // A queued host function, and the host functions that ran: CUDA's callback thread hands them
  // over to Finished, and the stream destroys them (and what they captured) on the next call from a
  // caller's thread. Defined in cuda_stream.cpp.
  struct HostCall;
  struct Finished;

 private:
  void destroy_finished() noexcept;

  int device_;
  StreamRole role_;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;  // keeps issue() positions in the stream's queue order across threads
  std::shared_ptr<StreamFailure> failure_ = std::make_shared<StreamFailure>();
  std::shared_ptr<Finished> finished_;
};

}  // namespace tessera
