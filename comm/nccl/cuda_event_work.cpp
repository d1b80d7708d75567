// CudaEventWork and CudaDeviceGuard.
#include "comm/nccl/cuda_event_work.hpp"

#include "comm/nccl/nccl_check.hpp"

namespace tessera::detail {

CudaDeviceGuard::CudaDeviceGuard(int device) {
  TESSERA_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) TESSERA_CUDA_CHECK(cudaSetDevice(device));
}

CudaDeviceGuard::~CudaDeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_ && previous_ >= 0) cudaSetDevice(previous_);
}

CudaEventWork::CudaEventWork(int device, cudaEvent_t done, cudaStream_t compute_stream)
    : device_(device), done_(done), compute_stream_(compute_stream) {}

CudaEventWork::~CudaEventWork() { cudaEventDestroy(done_); }

void CudaEventWork::wait() {
  CudaDeviceGuard guard(device_);
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(compute_stream_, done_, 0));
}

bool CudaEventWork::is_completed() {
  CudaDeviceGuard guard(device_);
  const cudaError_t state = cudaEventQuery(done_);
  if (state == cudaErrorNotReady) return false;
  TESSERA_CUDA_CHECK(state);
  return true;
}

}  // namespace tessera::detail
