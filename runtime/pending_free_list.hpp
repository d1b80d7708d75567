// PendingFreeList: blocks a device has been given back (Device::deallocate) while work queued on some
// stream may still use them. A block is released only once every one of its events has completed;
// until then it is neither freed nor reused. Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "tessera/runtime/event.hpp"
#include "tessera/runtime/memory_kind.hpp"

namespace tessera {

class PendingFreeList {
 public:
  // How a block finally goes back to its allocator (std::free, a caching allocator, a GPU pool's
  // free on a stream). Must not throw.
  using Release = std::function<void(void* ptr, std::size_t bytes, MemoryKind kind)>;

  explicit PendingFreeList(Release release) : release_(std::move(release)) {}
  // Waits for every pending event, then releases every block.
  ~PendingFreeList();
  PendingFreeList(const PendingFreeList&) = delete;
  PendingFreeList& operator=(const PendingFreeList&) = delete;

  // Releases the block now when every event in `pending` has completed, else keeps it. Never blocks;
  // when even the bookkeeping cannot be allocated the block is leaked rather than freed early.
  void add(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept;
  // Releases every kept block whose events have all completed. Never blocks.
  void reclaim_completed() noexcept;
  // Waits for every kept block's events (failures are ignored: the work is over either way), then
  // releases them all.
  void reclaim_all() noexcept;

  std::size_t bytes() const;  // bytes of the blocks kept now
  std::size_t size() const;   // number of blocks kept now

 private:
  struct Block {
    void* ptr;
    std::size_t bytes;
    MemoryKind kind;
    std::vector<Event> pending;
  };
  static bool completed(const Block& block);

  Release release_;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
};

}  // namespace tessera
