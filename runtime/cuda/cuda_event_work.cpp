// CudaEventWork: event queries and waits on the event's own GPU.
#include "tessera/runtime/cuda/cuda_event_work.hpp"

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_guard.hpp"

namespace tessera::detail {

CudaEventWork::CudaEventWork(int device, cudaEvent_t event, std::shared_ptr<const StreamFailure> failure,
                             std::uint64_t position)
    : device_(device), event_(event), failure_(std::move(failure)), position_(position) {}

CudaEventWork::~CudaEventWork() {
  int previous = -1;
  const bool switched =
      cudaGetDevice(&previous) == cudaSuccess && previous != device_ && cudaSetDevice(device_) == cudaSuccess;
  cudaEventDestroy(event_);
  if (switched) cudaSetDevice(previous);
}

void CudaEventWork::wait() {
  {
    CudaDeviceGuard guard(device_);
    TESSERA_CUDA_CHECK(cudaEventSynchronize(event_));
  }
  if (std::exception_ptr error = failure()) std::rethrow_exception(error);
}

bool CudaEventWork::is_completed() {
  int previous = -1;
  const bool switched =
      cudaGetDevice(&previous) == cudaSuccess && previous != device_ && cudaSetDevice(device_) == cudaSuccess;
  const cudaError_t state = cudaEventQuery(event_);
  if (switched) cudaSetDevice(previous);
  if (state == cudaErrorNotReady) return false;
  if (state != cudaSuccess) cudaGetLastError();  // not sticky: wait() reports it with its call
  return true;
}

void CudaEventWork::enqueue_wait(cudaStream_t stream) const {
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

std::exception_ptr CudaEventWork::failure() const { return failure_ ? failure_->through(position_) : nullptr; }

bool CudaEventWork::may_fail() const {
  return failure_ && (failure_->through(position_) || failure_->unsettled_through(position_));
}

}  // namespace tessera::detail
