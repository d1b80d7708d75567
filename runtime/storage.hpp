// Storage: one tracked allocation on a Device, shared by every Tensor that views it.
// Reports its bytes to the device's MemoryTracker under one MemoryCategory for its whole life.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/memory_category.hpp"

namespace tessera {

class Device;

class Storage {
 public:
  // Allocates `bytes` on `device`, tagged `category`. The device must outlive the storage.
  static std::shared_ptr<Storage> allocate(Device& device, std::size_t bytes, MemoryCategory category);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  MemoryCategory category() const { return category_; }
  Device& device() const { return *device_; }

 private:
  Storage(Device& device, void* data, std::size_t bytes, MemoryCategory category);

  Device* device_;
  void* data_;
  std::size_t bytes_;
  MemoryCategory category_;
};

}  // namespace tessera
