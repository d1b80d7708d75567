// CudaStream: events are CUDA events tagged with the stream's failure record; host functions carry
// their position so that a failure lands at its place in the stream's order.
#include "tessera/runtime/cuda/cuda_stream.hpp"

#include <utility>
#include <vector>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_event_work.hpp"

namespace tessera {

struct CudaStream::Finished {
  std::mutex mutex;
  std::vector<std::unique_ptr<HostCall>> calls;
};

struct CudaStream::HostCall {
  std::function<void()> fn;
  std::shared_ptr<StreamFailure> failure;
  std::uint64_t position;
  std::shared_ptr<Finished> finished;
};

namespace {

// On CUDA's callback thread: no CUDA call may happen here, so the call (with what `fn` captured) is
// handed to the stream's Finished list instead of being destroyed.
void CUDART_CB run_host_call(void* data) {
  std::unique_ptr<CudaStream::HostCall> call(static_cast<CudaStream::HostCall*>(data));
  try {
    call->fn();
  } catch (...) {
    call->failure->fail(call->position, std::current_exception());
  }
  call->failure->done(call->position);
  const std::shared_ptr<CudaStream::Finished> finished = call->finished;
  try {
    std::lock_guard lock(finished->mutex);
    finished->calls.push_back(std::move(call));
  } catch (...) {
    call.release();  // leaked rather than destroyed here
  }
}

}  // namespace

CudaStream::CudaStream(int device, StreamRole role)
    : device_(device), role_(role), finished_(std::make_shared<Finished>()) {
  select_cuda_device(device_);
  TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  select_cuda_device_noexcept(device_);
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
  destroy_finished();
}

void CudaStream::destroy_finished() noexcept {
  std::vector<std::unique_ptr<HostCall>> calls;
  {
    std::lock_guard lock(finished_->mutex);
    calls.swap(finished_->calls);
  }
  // `calls` goes out of scope here, on the caller's thread.
}

Event CudaStream::record() {
  select_cuda_device(device_);
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
      select_cuda_device(device_);
      std::lock_guard lock(mutex_);
      cuda->enqueue_wait(stream_);
    }
    // The event's own stream failed before it (or may still): fail this stream at this point too.
    // (The host function holds the failure record, not the CUDA event.)
    if (cuda->may_fail()) {
      launch_host_function([record = cuda->failure_record(), position = cuda->position()] {
        if (std::exception_ptr error = record->through(position)) std::rethrow_exception(error);
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
  destroy_finished();
  select_cuda_device(device_);
  std::lock_guard lock(mutex_);
  auto call = std::make_unique<HostCall>(HostCall{std::move(fn), failure_, failure_->issue(), finished_});
  const cudaError_t launched = cudaLaunchHostFunc(stream_, run_host_call, call.get());
  if (launched != cudaSuccess) failure_->done(call->position);  // it will never run
  TESSERA_CUDA_CHECK(launched);
  call.release();  // run_host_call owns it now
}

void CudaStream::synchronize() {
  destroy_finished();
  {
    select_cuda_device(device_);
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  destroy_finished();
  if (std::exception_ptr error = failure_->first()) std::rethrow_exception(error);
}

}  // namespace tessera
