// NcclWork::wait: the compute stream, not the host, waits.
#include "tessera/comm/nccl/nccl_work.hpp"

#include "tessera/runtime/cuda/cuda_device_select.hpp"

namespace tessera::detail {

void NcclWork::wait() {
  select_cuda_device(done_->device());
  done_->enqueue_wait(compute_stream_);
}

}  // namespace tessera::detail
