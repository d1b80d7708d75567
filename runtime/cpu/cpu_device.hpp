// CpuDevice: host memory (64-byte aligned; pinned host memory is the same memory, tracked in its own
// tier), the CpuKernels table (the CPU kernel level chosen at start-up, kernel_level.hpp), and three streams: compute and communication run inline, the copy
// stream runs on its own worker thread. Blocks given back while a stream may still use them wait in
// a PendingFreeList until their events complete; then they go to a BlockCache, which hands them out
// again for requests of the same size class (the trackers count Storage bytes as before; the
// cache's reserved bytes are cached_bytes()).
#pragma once

#include "tessera/runtime/cpu/block_cache.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/host_streams.hpp"
#include "tessera/runtime/pending_free_list.hpp"

namespace tessera {

class CpuDevice final : public Device {
 public:
  CpuDevice();
  // Waits for the copy stream and for every pending block, then frees them (never throws).
  ~CpuDevice() override;
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string name() const override;
  MemorySpace memory_space() const override { return MemorySpace::kHost; }

  void* allocate(std::size_t bytes, MemoryKind kind) override;
  void deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept override;
  std::size_t pending_free_bytes() const override { return pending_frees_.bytes(); }
  std::size_t cached_bytes() const override { return cache_.cached_bytes(); }
  // Frees every cached block back to the system (blocks in use and pending ones stay).
  void release_cached() noexcept { cache_.release_cached(); }
  // The caching allocator's figures (reserved bytes, system allocations).
  const BlockCache& block_cache() const { return cache_; }

  void copy(void* dst, const void* src, std::size_t bytes) override;
  // Copies of 1 MiB and more use parallel non-temporal stores (runtime/cpu/host_copy.hpp, of the
  // kernels' level).
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  // Fills of 1 MiB and more likewise (the gradient accumulators zeroed at the start of a step).
  void fill_zero(void* dst, std::size_t bytes) override;
  // On the copy stream these run on its worker thread, one thread per copy (the compute threads
  // stay with the kernels).
  void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) override;
  void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) override;

  Stream& stream(StreamRole role) override;
  void synchronize() override;
  const Kernels& kernels() const override { return kernels_; }
  // The host's: process limits, and MemAvailable or the cgroup's remaining memory.
  MemoryBudget memory_budget() const override;

 private:
  CpuKernels kernels_;
  BlockCache cache_;  // before pending_frees_: pending blocks are released into it
  PendingFreeList pending_frees_;
  HostStreams streams_;  // after pending_frees_: the copy stream's work ends before blocks are freed
};

}  // namespace tessera
