// select_cuda_device: makes a CUDA device the calling thread's current one, at every CUDA call site
// (the thread that makes the device, the watchdog's, a checkpoint writer's). Nothing switches back:
// a process drives its rank's GPU, and switching a fresh thread back to its default device 0 would
// create a context there (about 0.5 GB) from every rank of a node.
#pragma once

#include <cuda_runtime.h>

#include "tessera/runtime/cuda/cuda_check.hpp"

namespace tessera {

// Throws CudaError when the device cannot be selected.
inline void select_cuda_device(int device) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) TESSERA_CUDA_CHECK(cudaSetDevice(device));
}

// For destructors and other paths that must not throw: false when the device could not be selected
// (the error is cleared).
inline bool select_cuda_device_noexcept(int device) noexcept {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return true;
  if (cudaSetDevice(device) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

}  // namespace tessera
