// BlockCache: size classes, per-class free lists under one mutex, std::aligned_alloc / std::free
// behind them.
#include "tessera/runtime/cpu/block_cache.hpp"

#include <bit>
#include <cstdlib>
#include <limits>
#include <new>

namespace tessera {
namespace {

constexpr std::size_t kFineLimit = std::size_t{32} << 10;  // up to here: multiples of 64 bytes

std::size_t round_up(std::size_t bytes, std::size_t granule) {
  if (bytes > std::numeric_limits<std::size_t>::max() - (granule - 1)) throw std::bad_alloc();
  return (bytes + granule - 1) / granule * granule;
}

}  // namespace

BlockCache::~BlockCache() { release_cached(); }

std::size_t BlockCache::size_class(std::size_t bytes) {
  if (bytes <= kFineLimit) return round_up(bytes == 0 ? 1 : bytes, kAlignment);
  // Eight classes per power of two: the granule is 1/8 of the largest power of two <= bytes.
  return round_up(bytes, std::bit_floor(bytes) / 8);
}

void* BlockCache::allocate(std::size_t bytes) {
  const std::size_t cls = size_class(bytes);
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= cls;
      in_use_ += cls;
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlignment, cls);
  if (p == nullptr) {
    release_cached();  // the cached blocks may be what stands between this request and success
    p = std::aligned_alloc(kAlignment, cls);
    if (p == nullptr) throw std::bad_alloc();
  }
  std::lock_guard lock(mutex_);
  in_use_ += cls;
  if (in_use_ > peak_in_use_) peak_in_use_ = in_use_;
  ++system_allocations_;
  return p;
}

void BlockCache::release(void* ptr, std::size_t bytes) noexcept {
  if (ptr == nullptr) return;
  const std::size_t cls = size_class(bytes);  // cannot throw: allocate computed it for this size
  {
    std::lock_guard lock(mutex_);
    in_use_ -= cls;
    if (cached_ + cls <= peak_in_use_) {
      try {
        free_[cls].push_back(ptr);
        cached_ += cls;
        return;
      } catch (...) {
        // No memory for the bookkeeping: free the block instead.
      }
    }
  }
  std::free(ptr);
}

void BlockCache::release_cached() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [cls, blocks] : free_) {
    for (void* p : blocks) std::free(p);
  }
  free_.clear();
  cached_ = 0;
}

std::size_t BlockCache::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

std::size_t BlockCache::in_use_bytes() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t BlockCache::peak_in_use_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_in_use_;
}

std::int64_t BlockCache::system_allocations() const {
  std::lock_guard lock(mutex_);
  return system_allocations_;
}

}  // namespace tessera
