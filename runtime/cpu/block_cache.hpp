// BlockCache: the CPU device's caching allocator. Freed host blocks are kept by size class and
// handed out again for the next request of the same class, so a training step that allocates and
// frees the same shapes every step calls neither the system allocator nor the kernel: no fresh
// pages to fault in and zero, no mmap/munmap of large blocks.
//
// Size classes: requests are rounded up to 64 bytes, and above 32 KiB to a multiple of 1/8 of
// their power of two (so a block is at most 12.5% larger than asked). Only whole blocks of the same
// class are reused; nothing is split or merged.
//
// Bounds: the cache holds at most as many bytes as were ever in use at once (the high-water mark
// of blocks handed out), so reserved memory stays within twice the peak; a block that would go
// past it is freed at once. When the system allocator fails, every cached block is freed and the
// request tried again before it fails. The trackers (MemoryTracker) never see any of this: they
// count Storage bytes, in use or not. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tessera {

class BlockCache {
 public:
  static constexpr std::size_t kAlignment = 64;

  BlockCache() = default;
  ~BlockCache();  // frees every cached block
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The class (bytes actually reserved) a request of `bytes` is served from; >= bytes.
  // Throws std::bad_alloc when rounding up would overflow.
  static std::size_t size_class(std::size_t bytes);

  // A block of at least `bytes`, 64-byte aligned: a cached one of its class, else a new one.
  // Throws std::bad_alloc when the system cannot give one even after the cache was emptied.
  void* allocate(std::size_t bytes);
  // Takes back a block from allocate(bytes) for reuse (or frees it, past the bound). Never throws.
  void release(void* ptr, std::size_t bytes) noexcept;
  // Frees every cached block (blocks in use are not affected).
  void release_cached() noexcept;

  std::size_t cached_bytes() const;  // reserved in cached blocks, not in use
  std::size_t in_use_bytes() const;  // reserved in blocks handed out and not given back
  std::size_t peak_in_use_bytes() const;
  // Blocks obtained from the system allocator so far (requests the cache could not serve).
  std::int64_t system_allocations() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // by class
  std::size_t cached_ = 0, in_use_ = 0, peak_in_use_ = 0;
  std::int64_t system_allocations_ = 0;
};

}  // namespace tessera
