// DeviceAddressSpace: the memory of a simulated discrete device. Each device block has two
// addresses: the device address handed out (a reservation with no access rights, so the host faults
// on any read or write through it, as it would on a GPU's memory) and the backing memory behind it,
// which only the device itself reaches, by translating (its kernels, its copy engine, its fills).
// Pinned host blocks are ordinary host memory the device's copies and fills also reach (their
// address is their backing), but its kernels do not. A pointer in no block of the kinds asked for
// is refused by translate() with a message naming the pointer, so a host pointer handed to a device
// kernel fails loudly too. Thread-safe.
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

  // A new block of `bytes` (page-aligned): device memory, or pinned host memory (`pinned`); returns
  // its address. Throws std::bad_alloc when the system refuses the mapping.
  void* allocate(std::size_t bytes, bool pinned = false);
  // Unmaps the block at `address` (its start). Never throws; an unknown pointer is ignored.
  void release(void* address) noexcept;

  // The backing address of `p` (anywhere inside a live device block, or one past its end for an
  // empty range; with `pinned_too` also inside a pinned block, which is its own backing); nullptr for
  // nullptr. Throws std::invalid_argument naming `what` and the pointer otherwise.
  void* translate(const void* p, const char* what, bool pinned_too = false) const;
  // Whether `p` lies inside a live device block.
  bool is_device(const void* p) const;
  std::size_t bytes() const;  // device bytes mapped now

 private:
  struct Block {
    std::size_t bytes;
    std::byte* backing;  // the address itself for a pinned block
    bool pinned;
  };
  // The block holding `p`, or end(); the caller holds the lock.
  std::map<std::uintptr_t, Block>::const_iterator find(const void* p) const;

  mutable std::shared_mutex mutex_;
  std::map<std::uintptr_t, Block> blocks_;  // by device address
  std::size_t bytes_ = 0;                   // of device blocks
};

}  // namespace tessera
