// TimedDevice: a Device in front of another one (which it owns) that forwards everything to it and
// measures where the time goes: its kernels() is a TimedKernels over the inner device's table
// (time per KernelGroup), and the memory operations the framework issues around the kernels —
// allocation, freeing, zero-filling and synchronous copies — are timed per MemoryOp. A benchmark
// runs the real training step on it and reads both; what neither covers is bookkeeping.
//
// Memory is the inner device's, but the trackers are this device's own: every Storage made on a
// TimedDevice reports to it, exactly as on the inner device. Streams and events are the inner
// device's. Timing is host wall time around each call (exact for the CPU device, whose kernels and
// copies run on the calling thread); asynchronous copies are forwarded untimed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/timed_kernels.hpp"

namespace tessera {

enum class MemoryOp { kAllocate, kFree, kFill, kCopy };

inline constexpr int kMemoryOpCount = 4;

const char* memory_op_name(MemoryOp op);  // "allocate", "free", "fill", "copy"

// Seconds, calls and bytes per memory operation since the last reset.
struct MemoryOpTimes {
  std::array<double, kMemoryOpCount> seconds{};
  std::array<std::int64_t, kMemoryOpCount> calls{};
  std::array<std::int64_t, kMemoryOpCount> bytes{};

  double seconds_of(MemoryOp op) const { return seconds[static_cast<int>(op)]; }
  std::int64_t calls_of(MemoryOp op) const { return calls[static_cast<int>(op)]; }
  std::int64_t bytes_of(MemoryOp op) const { return bytes[static_cast<int>(op)]; }
  double total_seconds() const;
};

class TimedDevice final : public Device {
 public:
  // Takes `inner` (not null). Every Storage made on this device must be gone before it is destroyed.
  explicit TimedDevice(std::unique_ptr<Device> inner);

  Device& inner() { return *inner_; }
  KernelTimes kernel_times() const { return kernels_.times(); }
  MemoryOpTimes memory_op_times() const;
  // Sets every kernel and memory-operation total to zero (the start of a measured step).
  void reset_times();

  DeviceKind kind() const override { return inner_->kind(); }
  std::string name() const override { return inner_->name(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  void* allocate(std::size_t bytes, MemoryKind kind) override;
  void deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept override;
  std::size_t pending_free_bytes() const override { return inner_->pending_free_bytes(); }
  std::size_t cached_bytes() const override { return inner_->cached_bytes(); }
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  void fill_zero(void* dst, std::size_t bytes) override;
  void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) override;
  void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) override;
  Stream& stream(StreamRole role) override { return inner_->stream(role); }
  void synchronize() override { inner_->synchronize(); }
  void begin_step(std::int64_t step) override { inner_->begin_step(step); }
  const Kernels& kernels() const override { return kernels_; }
  MemoryBudget memory_budget() const override { return inner_->memory_budget(); }

 private:
  // Runs `op` and adds its wall time and `bytes` to `which`.
  template <typename Op>
  void timed(MemoryOp which, std::size_t bytes, Op&& op);

  std::unique_ptr<Device> inner_;
  TimedKernels kernels_;
  std::array<std::atomic<std::int64_t>, kMemoryOpCount> nanoseconds_{};
  std::array<std::atomic<std::int64_t>, kMemoryOpCount> calls_{};
  std::array<std::atomic<std::int64_t>, kMemoryOpCount> bytes_{};
};

}  // namespace tessera
