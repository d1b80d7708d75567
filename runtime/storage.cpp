// Storage allocation and release, reported to the device's memory tracker of the storage's kind;
// the release carries an event of every recorded stream.
#include "tessera/runtime/storage.hpp"

#include <algorithm>
#include <stdexcept>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/out_of_memory.hpp"

namespace tessera {

std::shared_ptr<Storage> Storage::allocate(Device& device, std::size_t bytes, MemoryCategory category,
                                           MemoryKind kind) {
  if (kind == MemoryKind::kNvme) {
    throw std::invalid_argument("Storage: NVMe bytes live in an NvmeStore, not in device allocations");
  }
  void* data = nullptr;
  try {
    if (bytes > 0) data = device.allocate(bytes, kind);
  } catch (const std::bad_alloc&) {
    const MemoryTracker& tracker = device.memory(kind);
    throw OutOfMemoryError(out_of_memory_message(device.name(), memory_kind_name(kind), memory_category_name(category),
                                                 bytes, tracker.current_total(), tracker.peak_total()));
  }
  try {
    device.memory(kind).on_allocate(category, bytes);
    return std::shared_ptr<Storage>(new Storage(device, data, bytes, category, kind));
  } catch (...) {
    if (data != nullptr) device.deallocate(data, bytes, kind, {});
    throw;
  }
}

Storage::Storage(Device& device, void* data, std::size_t bytes, MemoryCategory category, MemoryKind kind)
    : device_(&device), data_(data), bytes_(bytes), category_(category), kind_(kind) {}

void Storage::record_stream(Stream& stream) {
  std::lock_guard lock(streams_mutex_);
  if (std::find(streams_.begin(), streams_.end(), &stream) == streams_.end()) streams_.push_back(&stream);
}

Storage::~Storage() {
  device_->memory(kind_).on_free(category_, bytes_);
  if (data_ == nullptr) return;
  std::vector<Event> pending;
  try {
    pending.reserve(streams_.size());
    for (Stream* stream : streams_) pending.push_back(stream->record());
  } catch (...) {
    // Out of memory while recording: wait for the streams instead (this is the only way left to
    // know the block is unused).
    for (Stream* stream : streams_) {
      try {
        stream->synchronize();
      } catch (...) {
      }
    }
    pending.clear();
  }
  device_->deallocate(data_, bytes_, kind_, pending);
}

}  // namespace tessera
