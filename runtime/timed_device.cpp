// TimedDevice: forwarding to the inner device, with the memory operations timed into atomic totals.
#include "tessera/runtime/timed_device.hpp"

#include <chrono>
#include <stdexcept>

namespace tessera {

const char* memory_op_name(MemoryOp op) {
  switch (op) {
    case MemoryOp::kAllocate: return "allocate";
    case MemoryOp::kFree: return "free";
    case MemoryOp::kFill: return "fill";
    case MemoryOp::kCopy: return "copy";
  }
  return "unknown";
}

double MemoryOpTimes::total_seconds() const {
  double total = 0.0;
  for (double s : seconds) total += s;
  return total;
}

namespace {

std::unique_ptr<Device> checked(std::unique_ptr<Device> inner) {
  if (!inner) throw std::invalid_argument("TimedDevice: no device to time");
  return inner;
}

}  // namespace

TimedDevice::TimedDevice(std::unique_ptr<Device> inner)
    : inner_(checked(std::move(inner))), kernels_(inner_->kernels()) {}

MemoryOpTimes TimedDevice::memory_op_times() const {
  MemoryOpTimes t;
  for (int i = 0; i < kMemoryOpCount; ++i) {
    t.seconds[i] = static_cast<double>(nanoseconds_[i].load(std::memory_order_relaxed)) * 1e-9;
    t.calls[i] = calls_[i].load(std::memory_order_relaxed);
    t.bytes[i] = bytes_[i].load(std::memory_order_relaxed);
  }
  return t;
}

void TimedDevice::reset_times() {
  kernels_.reset();
  for (int i = 0; i < kMemoryOpCount; ++i) {
    nanoseconds_[i].store(0, std::memory_order_relaxed);
    calls_[i].store(0, std::memory_order_relaxed);
    bytes_[i].store(0, std::memory_order_relaxed);
  }
}

template <typename Op>
void TimedDevice::timed(MemoryOp which, std::size_t bytes, Op&& op) {
  const auto t0 = std::chrono::steady_clock::now();
  op();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  const auto i = static_cast<std::size_t>(which);
  nanoseconds_[i].fetch_add(ns.count(), std::memory_order_relaxed);
  calls_[i].fetch_add(1, std::memory_order_relaxed);
  bytes_[i].fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

void* TimedDevice::allocate(std::size_t bytes, MemoryKind kind) {
  void* p = nullptr;
  timed(MemoryOp::kAllocate, bytes, [&] { p = inner_->allocate(bytes, kind); });
  return p;
}

void TimedDevice::deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept {
  // steady_clock and relaxed atomics do not throw; the inner deallocate never does.
  timed(MemoryOp::kFree, bytes, [&] { inner_->deallocate(ptr, bytes, kind, pending); });
}

void TimedDevice::copy(void* dst, const void* src, std::size_t bytes) {
  timed(MemoryOp::kCopy, bytes, [&] { inner_->copy(dst, src, bytes); });
}

void TimedDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  timed(MemoryOp::kCopy, bytes, [&] { inner_->copy_to_host(host_dst, src, bytes); });
}

void TimedDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  timed(MemoryOp::kCopy, bytes, [&] { inner_->copy_from_host(dst, host_src, bytes); });
}

void TimedDevice::fill_zero(void* dst, std::size_t bytes) {
  timed(MemoryOp::kFill, bytes, [&] { inner_->fill_zero(dst, bytes); });
}

void TimedDevice::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) {
  inner_->copy_to_host_async(host_dst, src, bytes, stream);
}

void TimedDevice::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) {
  inner_->copy_from_host_async(dst, host_src, bytes, stream);
}

}  // namespace tessera
