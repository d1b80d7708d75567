// AlignedBuffer: host memory aligned for O_DIRECT transfers (kDirectIoAlignment), booked on a
// MemoryTracker under one category for its life. Grows on demand (contents are not kept). Without
// `holds_data` (a meta device's planning run) it only books the bytes and data() stays null.
#pragma once

#include <cstddef>

#include "tessera/runtime/memory_category.hpp"

namespace tessera {

class MemoryTracker;

class AlignedBuffer {
 public:
  AlignedBuffer(MemoryTracker* tracker, MemoryCategory category, bool holds_data = true)
      : tracker_(tracker), category_(category), holds_data_(holds_data) {}
  ~AlignedBuffer() { release(); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // At least `bytes` (rounded up to the alignment); reallocates when larger than before.
  std::byte* reserve(std::size_t bytes);
  std::byte* data() const { return data_; }
  void release();

 private:
  MemoryTracker* tracker_;
  MemoryCategory category_;
  bool holds_data_;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace tessera
