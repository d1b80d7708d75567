// DeviceAddressSpace: one inaccessible reservation and one backing mapping per block.
#include "tessera/runtime/simulated/device_address_space.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

namespace tessera {
namespace {

std::size_t page_rounded(std::size_t bytes) {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
}

void* map(std::size_t bytes, int protection) {
  void* p = mmap(nullptr, bytes, protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

DeviceAddressSpace::~DeviceAddressSpace() {
  for (const auto& [address, block] : blocks_) {
    if (!block.pinned) munmap(reinterpret_cast<void*>(address), block.bytes);
    munmap(block.backing, block.bytes);
  }
}

void* DeviceAddressSpace::allocate(std::size_t bytes, bool pinned) {
  const std::size_t size = page_rounded(bytes);
  void* backing = map(size, PROT_READ | PROT_WRITE);
  void* address = backing;
  if (!pinned) {
    try {
      address = map(size, PROT_NONE);
    } catch (...) {
      munmap(backing, size);
      throw;
    }
  }
  std::unique_lock lock(mutex_);
  blocks_.emplace(reinterpret_cast<std::uintptr_t>(address), Block{size, static_cast<std::byte*>(backing), pinned});
  if (!pinned) bytes_ += size;
  return address;
}

void DeviceAddressSpace::release(void* address) noexcept {
  Block block{};
  {
    std::unique_lock lock(mutex_);
    const auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(address));
    if (it == blocks_.end()) return;
    block = it->second;
    if (!block.pinned) bytes_ -= block.bytes;
    blocks_.erase(it);
  }
  if (!block.pinned) munmap(address, block.bytes);
  munmap(block.backing, block.bytes);
}

std::map<std::uintptr_t, DeviceAddressSpace::Block>::const_iterator DeviceAddressSpace::find(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return blocks_.end();
  --it;
  return address <= it->first + it->second.bytes ? it : blocks_.end();
}

void* DeviceAddressSpace::translate(const void* p, const char* what, bool pinned_too) const {
  if (p == nullptr) return nullptr;
  std::shared_lock lock(mutex_);
  const auto it = find(p);
  if (it == blocks_.end() || (it->second.pinned && !pinned_too)) {
    throw std::invalid_argument(std::string(what) + ": " + pointer_text(p) +
                                " is not device memory of this device (a host pointer where a device pointer belongs)");
  }
  return it->second.backing + (reinterpret_cast<std::uintptr_t>(p) - it->first);
}

bool DeviceAddressSpace::is_device(const void* p) const {
  std::shared_lock lock(mutex_);
  const auto it = p != nullptr ? find(p) : blocks_.end();
  return it != blocks_.end() && !it->second.pinned;
}

std::size_t DeviceAddressSpace::bytes() const {
  std::shared_lock lock(mutex_);
  return bytes_;
}

}  // namespace tessera
