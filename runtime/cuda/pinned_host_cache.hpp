// PinnedHostCache: the kPinnedHost memory of a CudaDevice — page-locked host memory
// (cudaHostAlloc, portable to every GPU of the process) that the GPU copies to and from
// asynchronously. Pinning is slow (it maps every page for the GPU), so blocks given back are cached
// by size class (powers of two from 4 KiB) and handed out again; only trim() gives them back to the
// driver. Stream-ordered freeing is the device's business: a block comes back here only once no
// stream uses it any more. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tessera/runtime/allocator_stats.hpp"

namespace tessera {

class PinnedHostCache {
 public:
  PinnedHostCache() = default;
  ~PinnedHostCache();  // frees every block, cached or not (the device has synchronized)
  PinnedHostCache(const PinnedHostCache&) = delete;
  PinnedHostCache& operator=(const PinnedHostCache&) = delete;

  // A block of at least `bytes` (> 0, page-aligned); nullptr when pinned memory runs out. Other CUDA
  // errors throw.
  void* allocate(std::size_t bytes);
  // Takes back a block from allocate() into the cache. Never throws.
  void give_back(void* ptr) noexcept;
  // Frees the cached blocks (after an allocation failed, before retrying). Never throws.
  void trim() noexcept;

  AllocatorStats stats() const;
  // The size class a request of `bytes` is served from.
  static std::size_t size_class(std::size_t bytes);

 private:
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;     // by size class
  std::unordered_map<void*, std::size_t> handed_out_;  // block -> size class
  std::int64_t allocated_ = 0, peak_allocated_ = 0, reserved_ = 0, peak_reserved_ = 0;
};

}  // namespace tessera
