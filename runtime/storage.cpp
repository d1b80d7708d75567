// Storage allocation and release, reported to the device's memory tracker.
#include "runtime/storage.hpp"

#include "runtime/device.hpp"

namespace tessera {

std::shared_ptr<Storage> Storage::allocate(Device& device, std::size_t bytes, MemoryCategory category) {
  void* data = bytes > 0 ? device.allocate(bytes) : nullptr;
  device.memory().on_allocate(category, bytes);
  return std::shared_ptr<Storage>(new Storage(device, data, bytes, category));
}

Storage::Storage(Device& device, void* data, std::size_t bytes, MemoryCategory category)
    : device_(&device), data_(data), bytes_(bytes), category_(category) {}

Storage::~Storage() {
  if (data_ != nullptr) device_->deallocate(data_, bytes_);
  device_->memory().on_free(category_, bytes_);
}

}  // namespace tessera
