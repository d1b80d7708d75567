// StagedCommunicator: device buffers staged through pinned host memory for a host collective.
#include "tessera/comm/staged/staged_communicator.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

#include "tessera/comm/collective_args.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/completion_work.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {

StagedCommunicator::StagedCommunicator(Device& device, Communicator& host) : device_(&device), host_(&host) {
  detail::require_host_communicator(host, "StagedCommunicator");
}

StagedCommunicator::StagedCommunicator(Device& device, std::unique_ptr<Communicator> host)
    : device_(&device), owned_(std::move(host)), host_(owned_.get()) {
  detail::require_host_communicator(*host_, "StagedCommunicator");
}

StagedCommunicator::~StagedCommunicator() = default;

MemorySpace StagedCommunicator::memory_space() const { return device_->memory_space(); }

void* StagedCommunicator::staging(int slot, std::size_t bytes) {
  std::shared_ptr<Storage>& buffer = staging_[slot];
  if (!buffer || buffer->bytes() < bytes) {
    buffer.reset();  // the old block goes back before the larger one is taken
    buffer = Storage::allocate(*device_, std::max<std::size_t>(bytes, 64), MemoryCategory::kCommBuffers,
                               MemoryKind::kPinnedHost);
  }
  return buffer->data();
}

Work StagedCommunicator::staged(const void* in, std::size_t in_bytes, void* out, std::size_t out_bytes, bool in_place,
                                const std::function<void(void*, void*)>& host_collective) {
  try {
    const bool moves_data = in != nullptr || out != nullptr;  // a barrier moves none
    void* host_in = moves_data ? staging(0, in_bytes) : nullptr;
    void* host_out = in_place || !moves_data ? host_in : staging(1, out_bytes);
    if (in != nullptr) device_->copy_to_host(host_in, in, in_bytes);
    host_collective(host_in, host_out);
    if (out != nullptr) device_->copy_from_host(out, host_out, out_bytes);
    return Work();
  } catch (const std::exception&) {
    auto failed = std::make_shared<detail::CompletionWork>();
    failed->fail(std::current_exception());
    return Work(failed);
  }
}

Work StagedCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  detail::check_all_reduce_args({name(), rank(), size(), memory_space()}, buf, dtype, op);
  const std::size_t bytes = buf.count * dtype_size(dtype);
  return staged(buf.data, bytes, buf.data, bytes, true, [&](void* host, void*) {
    host_->all_reduce(Span(host, buf.count), dtype, op).wait();
  });
}

Work StagedCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  detail::check_reduce_scatter_args({name(), rank(), size(), memory_space()}, in, out, dtype, op);
  const std::size_t element = dtype_size(dtype);
  return staged(in.data, in.count * element, out.data, out.count * element, false, [&](void* host_in, void* host_out) {
    host_->reduce_scatter(ConstSpan(host_in, in.count), Span(host_out, out.count), dtype, op).wait();
  });
}

Work StagedCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  detail::check_all_reduce_f32_args({name(), rank(), size(), memory_space()}, buf, wire, op);
  const std::size_t bytes = buf.count * sizeof(float);
  return staged(buf.data, bytes, buf.data, bytes, true, [&](void* host, void*) {
    host_->all_reduce_f32(Span(host, buf.count), wire, op).wait();
  });
}

Work StagedCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  detail::check_reduce_scatter_f32_args({name(), rank(), size(), memory_space()}, in, out, wire, op);
  return staged(in.data, in.count * sizeof(float), out.data, out.count * sizeof(float), false,
                [&](void* host_in, void* host_out) {
                  host_->reduce_scatter_f32(ConstSpan(host_in, in.count), Span(host_out, out.count), wire, op).wait();
                });
}

Work StagedCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  detail::check_all_gather_args({name(), rank(), size(), memory_space()}, in, out, dtype);
  const std::size_t element = dtype_size(dtype);
  return staged(in.data, in.count * element, out.data, out.count * element, false, [&](void* host_in, void* host_out) {
    host_->all_gather(ConstSpan(host_in, in.count), Span(host_out, out.count), dtype).wait();
  });
}

Work StagedCommunicator::broadcast(Span buf, DType dtype, int root) {
  detail::check_broadcast_args({name(), rank(), size(), memory_space()}, buf, dtype, root);
  const std::size_t bytes = buf.count * dtype_size(dtype);
  const bool sender = rank() == root;
  return staged(sender ? buf.data : nullptr, bytes, sender ? nullptr : buf.data, bytes, true, [&](void* host, void*) {
    host_->broadcast(Span(host, buf.count), dtype, root).wait();
  });
}

Work StagedCommunicator::barrier() {
  return staged(nullptr, 0, nullptr, 0, true, [&](void*, void*) { host_->barrier().wait(); });
}

std::unique_ptr<Communicator> StagedCommunicator::split(int color, int key) {
  std::unique_ptr<Communicator> child = host_->split(color, key);
  if (!child) return nullptr;
  return std::make_unique<StagedCommunicator>(*device_, std::move(child));
}

}  // namespace tessera
