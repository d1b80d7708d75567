// AlignedBuffer: aligned_alloc'd host memory booked on a tracker.
#include "tessera/runtime/offload/aligned_buffer.hpp"

#include <cstdlib>
#include <new>

#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/runtime/offload/offload_file.hpp"

namespace tessera {

std::byte* AlignedBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return data_;
  release();
  const auto align = static_cast<std::size_t>(kDirectIoAlignment);
  const std::size_t rounded = (bytes + align - 1) / align * align;
  if (holds_data_) {
    data_ = static_cast<std::byte*>(std::aligned_alloc(align, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  capacity_ = rounded;
  if (tracker_ != nullptr) tracker_->on_allocate(category_, capacity_);
  return data_;
}

void AlignedBuffer::release() {
  if (capacity_ == 0) return;
  std::free(data_);
  if (tracker_ != nullptr) tracker_->on_free(category_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace tessera
