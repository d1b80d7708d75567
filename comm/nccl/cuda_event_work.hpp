// CudaEventWork: the Work state of an NCCL collective — a CUDA event recorded on the communication
// stream after the collective. is_completed() queries the event; wait() makes the compute stream
// wait for it (the host does not block).
#pragma once

#include <cuda_runtime.h>

#include "core/work.hpp"

namespace tessera::detail {

class CudaEventWork final : public WorkState {
 public:
  // Takes ownership of `done`.
  CudaEventWork(int device, cudaEvent_t done, cudaStream_t compute_stream);
  ~CudaEventWork() override;  // destroys the event; never throws
  CudaEventWork(const CudaEventWork&) = delete;
  CudaEventWork& operator=(const CudaEventWork&) = delete;

  void wait() override;
  bool is_completed() override;

 private:
  int device_;
  cudaEvent_t done_;
  cudaStream_t compute_stream_;
};

// Makes `device` current for the scope and restores the previous one.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace tessera::detail
