// CudaStream: events are CUDA events tagged with the stream's failure record; host functions carry
// their position so that a failure lands at its place in the stream's order.
#include "runtime/cuda/cuda_stream.hpp"

#include <utility>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/cuda_device_guard.hpp"
#include "runtime/cuda/cuda_event_work.hpp"

namespace tessera {
namespace {

struct HostCall {
  std::function<void()> fn;
  std::shared_ptr<StreamFailure> failure;
  std::uint64_t position;
};

void CUDART_CB run_host_call(void* data) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
  try {
    call->fn();
  } catch (...) {
    call->failure->fail(call->position, std::current_exception());
  }
  call->failure->done(call->position);
}

}  // namespace

CudaStream::CudaStream(int device, StreamRole role) : device_(device), role_(role) {
  CudaDeviceGuard guard(device_);
  TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  int previous = -1;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                        cudaSetDevice(device_) == cudaSuccess;
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
  if (switched) cudaSetDevice(previous);
}

Event CudaStream::record() {
  CudaDeviceGuard guard(device_);
  cudaEvent_t event = nullptr;
  TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  std::lock_guard lock(mutex_);
  const cudaError_t recorded = cudaEventRecord(event, stream_);
  if (recorded != cudaSuccess) cudaEventDestroy(event);
  TESSERA_CUDA_CHECK(recorded);
  return Event(std::make_shared<detail::CudaEventWork>(device_, event, failure_, failure_->issued()));
}

void CudaStream::wait(const Event& event) {
  const std::shared_ptr<detail::WorkState>& state = event.state();
  if (!state) return;  // a default-constructed event is complete
  if (auto cuda = std::dynamic_pointer_cast<detail::CudaEventWork>(state)) {
    {
      CudaDeviceGuard guard(device_);
      std::lock_guard lock(mutex_);
      cuda->enqueue_wait(stream_);
    }
    // The event's own stream failed before it (or may still): fail this stream at this point too.
    if (cuda->may_fail()) {
      launch_host_function([cuda] {
        if (std::exception_ptr error = cuda->failure()) std::rethrow_exception(error);
      });
    }
    return;
  }
  try {
    event.synchronize();  // not a CUDA event: the host waits
  } catch (...) {
    launch_host_function([error = std::current_exception()] { std::rethrow_exception(error); });
  }
}

void CudaStream::launch_host_function(std::function<void()> fn) {
  CudaDeviceGuard guard(device_);
  std::lock_guard lock(mutex_);
  auto call = std::make_unique<HostCall>(HostCall{std::move(fn), failure_, failure_->issue()});
  const cudaError_t launched = cudaLaunchHostFunc(stream_, run_host_call, call.get());
  if (launched != cudaSuccess) failure_->done(call->position);  // it will never run
  TESSERA_CUDA_CHECK(launched);
  call.release();  // run_host_call owns it now
}

void CudaStream::synchronize() {
  {
    CudaDeviceGuard guard(device_);
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  if (std::exception_ptr error = failure_->first()) std::rethrow_exception(error);
}

}  // namespace tessera
