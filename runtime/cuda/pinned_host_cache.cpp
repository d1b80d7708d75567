// PinnedHostCache: size classes, the free lists and the figures.
#include "tessera/runtime/cuda/pinned_host_cache.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>

#include "tessera/runtime/cuda/cuda_check.hpp"

namespace tessera {
namespace {

constexpr std::size_t kSmallestClass = 4096;

}  // namespace

PinnedHostCache::~PinnedHostCache() {
  trim();
  for (const auto& [ptr, size] : handed_out_) cudaFreeHost(ptr);
}

std::size_t PinnedHostCache::size_class(std::size_t bytes) { return std::bit_ceil(std::max(bytes, kSmallestClass)); }

void* PinnedHostCache::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  auto cached = free_.find(size);
  if (cached != free_.end() && !cached->second.empty()) {
    ptr = cached->second.back();
    cached->second.pop_back();
  } else {
    const cudaError_t result = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    if (result == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    TESSERA_CUDA_CHECK(result);
    reserved_ += static_cast<std::int64_t>(size);
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  handed_out_.emplace(ptr, size);
  allocated_ += static_cast<std::int64_t>(size);
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return ptr;
}

void PinnedHostCache::give_back(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  const auto it = handed_out_.find(ptr);
  if (it == handed_out_.end()) return;  // not ours: leave it alone rather than corrupt the cache
  const std::size_t size = it->second;
  handed_out_.erase(it);
  allocated_ -= static_cast<std::int64_t>(size);
  try {
    free_[size].push_back(ptr);
  } catch (...) {
    cudaFreeHost(ptr);  // no room to cache it: nothing uses it any more, so free it
    reserved_ -= static_cast<std::int64_t>(size);
  }
}

void PinnedHostCache::trim() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [size, blocks] : free_) {
    for (void* ptr : blocks) {
      if (cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
      reserved_ -= static_cast<std::int64_t>(size);
    }
  }
  free_.clear();
}

AllocatorStats PinnedHostCache::stats() const {
  std::lock_guard lock(mutex_);
  return {allocated_, peak_allocated_, reserved_, peak_reserved_};
}

}  // namespace tessera
