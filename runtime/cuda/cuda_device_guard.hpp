// CudaDeviceGuard: makes a CUDA device current for the calling thread for the guard's lifetime and
// restores the previous one afterwards (so a thread driving several devices issues each call to
// the right one).
#pragma once

#include <cuda_runtime.h>

#include "tessera/runtime/cuda/cuda_check.hpp"

namespace tessera {

class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device) {
    TESSERA_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device)
      TESSERA_CUDA_CHECK(cudaSetDevice(device));
    else
      previous_ = -1;  // nothing to restore
  }
  ~CudaDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);  // never throws
  }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace tessera
