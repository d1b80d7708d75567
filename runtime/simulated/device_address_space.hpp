// DeviceAddressSpace: the memory of a simulated discrete device. Each block has two addresses: the
// device address handed out (a reservation with no access rights, so the host faults on any read or
// write through it, as it would on a GPU's memory) and the backing memory behind it, which only the
// device itself reaches, by translating (its kernels, its copy engine, its fills). A pointer that is
// in no live block is refused by translate() with a message naming the pointer, so a host pointer
// handed to a device kernel fails loudly too. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>

namespace tessera {

class DeviceAddressSpace {
 public:
  DeviceAddressSpace() = default;
  ~DeviceAddressSpace();  // unmaps every block still allocated
  DeviceAddressSpace(const DeviceAddressSpace&) = delete;
  DeviceAddressSpace& operator=(const DeviceAddressSpace&) = delete;

  // A new block of `bytes` (page-aligned); returns its device address. Throws std::bad_alloc when
  // the system refuses the mapping.
  void* allocate(std::size_t bytes);
  // Unmaps the block at `device` (its start). Never throws; an unknown pointer is ignored.
  void release(void* device) noexcept;

  // The backing address of device address `p` (anywhere inside a live block, or one past its end
  // for an empty range); nullptr for nullptr. Throws std::invalid_argument naming `what` and the
  // pointer when `p` is in no block of this device.
  void* translate(const void* p, const char* what) const;
  // Whether `p` lies inside a live block.
  bool contains(const void* p) const;
  std::size_t bytes() const;  // mapped now

 private:
  struct Block {
    std::size_t bytes;
    std::byte* backing;
  };
  // The block holding `p`, or end(); the caller holds the lock.
  std::map<std::uintptr_t, Block>::const_iterator find(const void* p) const;

  mutable std::shared_mutex mutex_;
  std::map<std::uintptr_t, Block> blocks_;  // by device address
  std::size_t bytes_ = 0;
};

}  // namespace tessera
