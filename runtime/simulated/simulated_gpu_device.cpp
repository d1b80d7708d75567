// SimulatedGpuDevice: device blocks, pinned host blocks, fills, copies and the copy engine.
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "tessera/runtime/device_registry.hpp"

namespace tessera {

SimulatedGpuDevice::SimulatedGpuDevice()
    : pending_frees_([this](void* ptr, std::size_t, MemoryKind kind) { release(ptr, kind); }) {}

SimulatedGpuDevice::~SimulatedGpuDevice() {
  try {
    streams_.copy().synchronize();
  } catch (...) {
  }
  pending_frees_.reclaim_all();
}

std::string SimulatedGpuDevice::name() const {
  return "sim-gpu (discrete memory simulated on the cpu, " + std::to_string(cpu_threads()) + " threads)";
}

void* SimulatedGpuDevice::allocate(std::size_t bytes, MemoryKind kind) {
  pending_frees_.reclaim_completed();
  if (kind != MemoryKind::kPinnedHost) return space_.allocate(bytes);
  void* p = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  std::lock_guard lock(pinned_mutex_);
  pinned_.emplace(static_cast<const std::byte*>(p), bytes);
  return p;
}

void SimulatedGpuDevice::deallocate(void* ptr, std::size_t bytes, MemoryKind kind,
                                    std::span<const Event> pending) noexcept {
  pending_frees_.reclaim_completed();
  pending_frees_.add(ptr, bytes, kind, pending);
}

void SimulatedGpuDevice::release(void* ptr, MemoryKind kind) noexcept {
  if (kind != MemoryKind::kPinnedHost) {
    space_.release(ptr);
    return;
  }
  {
    std::lock_guard lock(pinned_mutex_);
    pinned_.erase(static_cast<const std::byte*>(ptr));
  }
  std::free(ptr);
}

void* SimulatedGpuDevice::reach(const void* p, std::size_t bytes, const char* what) const {
  if (p == nullptr || space_.contains(p)) return space_.translate(p, what);
  {
    std::lock_guard lock(pinned_mutex_);
    const auto* b = static_cast<const std::byte*>(p);
    auto it = pinned_.upper_bound(b);
    if (it != pinned_.begin()) {
      --it;
      if (b + bytes <= it->first + it->second) return const_cast<void*>(p);
    }
  }
  return space_.translate(p, what);  // throws, naming the pointer
}

void SimulatedGpuDevice::check_host(const void* p, const char* what) const {
  if (space_.contains(p)) {
    throw std::invalid_argument(std::string(what) + ": the host buffer is device memory of " + name());
  }
}

void SimulatedGpuDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  std::memmove(reach(dst, bytes, "SimulatedGpuDevice::copy"), reach(src, bytes, "SimulatedGpuDevice::copy"), bytes);
}

void SimulatedGpuDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check_host(host_dst, "SimulatedGpuDevice::copy_to_host");
  std::memcpy(host_dst, reach(src, bytes, "SimulatedGpuDevice::copy_to_host"), bytes);
}

void SimulatedGpuDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  check_host(host_src, "SimulatedGpuDevice::copy_from_host");
  std::memcpy(reach(dst, bytes, "SimulatedGpuDevice::copy_from_host"), host_src, bytes);
}

void SimulatedGpuDevice::fill_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  std::memset(reach(dst, bytes, "SimulatedGpuDevice::fill_zero"), 0, bytes);
}

void SimulatedGpuDevice::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) {
  if (bytes == 0) return;
  check_host(host_dst, "SimulatedGpuDevice::copy_to_host_async");
  const void* from = reach(src, bytes, "SimulatedGpuDevice::copy_to_host_async");
  if (&streams_.own(stream, "SimulatedGpuDevice::copy_to_host_async") == &streams_.copy())
    std::memset(host_dst, kCopyPendingByte, bytes);
  stream.launch_host_function([=] { std::memcpy(host_dst, from, bytes); });
}

void SimulatedGpuDevice::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) {
  if (bytes == 0) return;
  check_host(host_src, "SimulatedGpuDevice::copy_from_host_async");
  void* to = reach(dst, bytes, "SimulatedGpuDevice::copy_from_host_async");
  if (&streams_.own(stream, "SimulatedGpuDevice::copy_from_host_async") == &streams_.copy())
    std::memset(to, kCopyPendingByte, bytes);
  stream.launch_host_function([=] { std::memcpy(to, host_src, bytes); });
}

Stream& SimulatedGpuDevice::stream(StreamRole role) { return streams_.by_role(role); }

void SimulatedGpuDevice::synchronize() {
  const std::exception_ptr failure = streams_.synchronize();
  pending_frees_.reclaim_completed();
  if (failure) std::rethrow_exception(failure);
}

std::unique_ptr<Device> make_simulated_gpu_device() { return std::make_unique<SimulatedGpuDevice>(); }

namespace detail {
const DeviceRegistration kSimulatedGpuDeviceRegistration(DeviceBackend{
    DeviceChoice::kSimulatedGpu, "sim-gpu", [] { return 1; }, [] { return std::string(); },
    [](const DeviceOptions&) { return make_simulated_gpu_device(); }});
}  // namespace detail

}  // namespace tessera
