// CudaEventWork: event queries and waits on the event's own GPU.
#include "tessera/runtime/cuda/cuda_event_work.hpp"

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"

namespace tessera::detail {

CudaEventWork::CudaEventWork(int device, cudaEvent_t event, std::shared_ptr<const StreamFailure> failure,
                             std::uint64_t position)
    : device_(device), event_(event), failure_(std::move(failure)), position_(position) {}

CudaEventWork::~CudaEventWork() {
  select_cuda_device_noexcept(device_);
  cudaEventDestroy(event_);
}

void CudaEventWork::wait() {
  {
    select_cuda_device(device_);
    TESSERA_CUDA_CHECK(cudaEventSynchronize(event_));
  }
  if (std::exception_ptr error = failure()) std::rethrow_exception(error);
}

bool CudaEventWork::is_completed() {
  select_cuda_device_noexcept(device_);
  const cudaError_t state = cudaEventQuery(event_);
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
