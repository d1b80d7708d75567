// Device: where tensors live and kernels run. Owns one MemoryTracker per MemoryKind, its Kernels
// table and one Stream per StreamRole. Backends: runtime/cpu/ (always built), runtime/meta/ (sizes
// only, no memory) and runtime/cuda/ (one GPU; registered when the build has CUDA). Programs get
// one from make_device (runtime/device_factory.hpp).
// Modules never touch raw pointers' memory directly: they call device.kernels() and device copies,
// so the same module code runs on any device.
//
// Memory ownership: Storage (runtime/storage.hpp) allocates through allocate() and gives the block
// back through deallocate() with the events of the streams that still use it; the device frees the
// block only once those events have completed. Every Storage must be destroyed before its device.
// Threads: allocate, deallocate, the copies and the streams may be called from any host thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "tessera/runtime/allocator_stats.hpp"
#include "tessera/runtime/event.hpp"
#include "tessera/runtime/memory_budget.hpp"
#include "tessera/runtime/memory_kind.hpp"
#include "tessera/runtime/memory_space.hpp"
#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/runtime/stream.hpp"

namespace tessera {

class Kernels;

enum class DeviceKind { kCpu, kCuda, kMeta, kSimulatedGpu };

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;
  // Where this device's kDevice allocations point (kHost, kGpu, or kMeta: no memory at all).
  virtual MemorySpace memory_space() const = 0;
  // False for the meta device: its tensors have sizes but no data (null pointers).
  bool holds_data() const { return memory_space() != MemorySpace::kMeta; }
  // True when the host reads and writes this device's memory directly (the CPU device): state kept
  // in pinned host memory is then updated by the device's own kernels. False for a discrete device
  // (a GPU, the simulated one), whose offloaded state the host updates with the host's kernels.
  virtual bool memory_is_host() const { return memory_space() == MemorySpace::kHost; }

  // Raw memory of this device; untracked (Storage does the tracking). Alignment >= 64 bytes.
  // The meta device returns nullptr.
  virtual void* allocate(std::size_t bytes, MemoryKind kind) = 0;
  // Gives back a block of `bytes` from allocate(..., kind). The device must not free or reuse it
  // before every event in `pending` has completed (work queued on other streams may still read or
  // write it); it keeps the block aside until then. Never blocks, never throws.
  virtual void deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept = 0;
  // Bytes given back through deallocate() whose pending events have not all completed yet (held
  // aside, not reusable). The trackers no longer count them.
  virtual std::size_t pending_free_bytes() const = 0;
  // Bytes of freed blocks the device keeps for reuse (a caching allocator), neither in use nor
  // counted by the trackers; 0 for a device that gives every block back at once.
  virtual std::size_t cached_bytes() const { return 0; }

  // Copies within this device, or between this device and host memory; ordered after all work issued
  // on the compute stream. A copy to or from host memory has completed when it returns (the host may
  // read or reuse its buffer); one within a GPU's memory, and fill_zero there, may still be queued
  // on the compute stream, ahead of every later use of that memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;

  // Asynchronous copies queued on `stream` (one of this device's streams). The caller keeps both
  // buffers alive and unmodified until the stream has passed the copy (an event recorded after it
  // has completed); host memory should be kPinnedHost memory for the copy to overlap on a GPU.
  virtual void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) = 0;
  virtual void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) = 0;

  // This device's stream for `role`; the same object on every call, valid for the device's life.
  virtual Stream& stream(StreamRole role) = 0;

  // Waits until all work issued on every stream of this device has finished and gives back the
  // blocks whose pending events have completed; rethrows the first stream failure.
  virtual void synchronize() = 0;

  virtual const Kernels& kernels() const = 0;

  // The training loop is about to run step `step` (1-based: the step count once it completes); its
  // batches, forward, backward and optimizer step follow. For a device that ties what it does to
  // steps (the simulated GPU plants a fault in one); nothing by default.
  virtual void begin_step(std::int64_t step) { (void)step; }

  // How much more memory this device can give the process (both memory kinds: on the CPU they are
  // the same host memory). Unknown by default.
  virtual MemoryBudget memory_budget() const { return {}; }

  // What the allocator of `kind` memory holds (allocated, reserved, their peaks), for profilers and
  // benchmarks to print beside the trackers; unknown (-1) on a device that caches nothing.
  virtual AllocatorStats allocator_stats(MemoryKind kind = MemoryKind::kDevice) const {
    (void)kind;
    return {};
  }

  MemoryTracker& memory(MemoryKind kind = MemoryKind::kDevice) { return memory_[static_cast<std::size_t>(kind)]; }
  const MemoryTracker& memory(MemoryKind kind = MemoryKind::kDevice) const {
    return memory_[static_cast<std::size_t>(kind)];
  }

 private:
  std::array<MemoryTracker, kMemoryKindCount> memory_;
};

// The CPU device (OpenBLAS + OpenMP). Each call makes a new device with its own trackers.
std::unique_ptr<Device> make_cpu_device();

// Sets the OpenMP thread count used by CPU kernels (0 = leave the default). OpenBLAS is kept at one
// thread: CpuKernels::gemm spreads fixed output tiles over the OpenMP threads, so results do not
// depend on the count.
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace tessera
