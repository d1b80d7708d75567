// Storage: one tracked allocation on a Device, shared by every Tensor that views it.
// Reports its bytes to the device's MemoryTracker of its MemoryKind under one MemoryCategory for its
// whole life.
//
// Stream-ordered freeing: record_stream(s) says that work queued on stream s uses this memory. When
// the storage is destroyed the tracker is told at once (the bytes are logically free), and the
// device receives the block with an event recorded on each such stream; it frees or reuses the block
// only after those events complete, so a copy still queued on the copy stream never reads memory
// that has been handed to someone else.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/runtime/memory_category.hpp"
#include "tessera/runtime/memory_kind.hpp"

namespace tessera {

class Device;
class Stream;

class Storage {
 public:
  // Allocates `bytes` of `kind` memory on `device`, tagged `category`. The device must outlive the
  // storage.
  static std::shared_ptr<Storage> allocate(Device& device, std::size_t bytes, MemoryCategory category,
                                           MemoryKind kind = MemoryKind::kDevice);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  MemoryCategory category() const { return category_; }
  MemoryKind memory_kind() const { return kind_; }
  Device& device() const { return *device_; }

  // Work queued on `stream` (a stream of this storage's device) uses this memory: freeing waits for
  // the work queued on it up to the moment the storage is destroyed. Recording a stream twice is
  // the same as once.
  void record_stream(Stream& stream);

 private:
  Storage(Device& device, void* data, std::size_t bytes, MemoryCategory category, MemoryKind kind);

  Device* device_;
  void* data_;
  std::size_t bytes_;
  MemoryCategory category_;
  MemoryKind kind_;
  std::mutex streams_mutex_;
  std::vector<Stream*> streams_;  // recorded streams, each once
};

}  // namespace tessera
