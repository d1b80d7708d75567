// SimulatedGpuDevice: device blocks, pinned host blocks, fills, copies and the copy engine.
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "tessera/runtime/device_error.hpp"
#include "tessera/runtime/device_registry.hpp"

namespace tessera {

namespace {

// TESSERA_SIM_GPU_MEMORY as bytes; -1 when unset. Throws std::invalid_argument naming the variable.
std::int64_t capacity_from_environment() {
  const char* text = std::getenv("TESSERA_SIM_GPU_MEMORY");
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long long bytes = std::strtoll(text, &end, 10);
  if (end == nullptr || *end != '\0' || bytes <= 0) {
    throw std::invalid_argument(std::string("TESSERA_SIM_GPU_MEMORY = '") + text +
                                "': give the simulated GPU's memory in bytes (a positive integer), or unset it");
  }
  return bytes;
}

}  // namespace

SimulatedGpuSettings SimulatedGpuSettings::from_environment() {
  SimulatedGpuSettings settings;
  settings.capacity = capacity_from_environment();
  settings.fault = device_fault_plan_from_environment();
  return settings;
}

SimulatedGpuDevice::SimulatedGpuDevice() : SimulatedGpuDevice(SimulatedGpuSettings::from_environment()) {}

SimulatedGpuDevice::SimulatedGpuDevice(SimulatedGpuSettings settings)
    : capacity_(settings.capacity),
      faults_(std::move(settings.fault)),
      pending_frees_([this](void* ptr, std::size_t bytes, MemoryKind kind) {
        if (kind == MemoryKind::kDevice) device_bytes_ -= static_cast<std::int64_t>(bytes);
        space_.release(ptr);
      }) {}

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
  const bool device = kind == MemoryKind::kDevice;
  if (device && capacity_ >= 0 && device_bytes_ + static_cast<std::int64_t>(bytes) > capacity_) {
    throw std::bad_alloc();  // as a GPU that is full
  }
  if (device && faults_.fires(DeviceFaultKind::kOutOfMemory)) throw std::bad_alloc();  // as a GPU that is full
  void* p = space_.allocate(bytes, kind == MemoryKind::kPinnedHost);
  if (device) device_bytes_ += static_cast<std::int64_t>(bytes);
  return p;
}

MemoryBudget SimulatedGpuDevice::memory_budget() const {
  MemoryBudget budget;
  if (capacity_ < 0) return budget;
  budget.process_bytes = capacity_ - device_bytes_.load();  // each process simulates a GPU of its own
  budget.process_source = "simulated GPU memory TESSERA_SIM_GPU_MEMORY=" + std::to_string(capacity_);
  return budget;
}

void SimulatedGpuDevice::deallocate(void* ptr, std::size_t bytes, MemoryKind kind,
                                    std::span<const Event> pending) noexcept {
  pending_frees_.reclaim_completed();
  pending_frees_.add(ptr, bytes, kind, pending);
}

void* SimulatedGpuDevice::reach(const void* p, const char* what) const { return space_.translate(p, what, true); }

void SimulatedGpuDevice::check_host(const void* p, const char* what) const {
  if (space_.is_device(p)) {
    throw std::invalid_argument(std::string(what) + ": the host buffer is device memory of " + name());
  }
}

void SimulatedGpuDevice::before_host_copy(const char* op, std::size_t bytes, const char* direction) {
  streams_.by_role(StreamRole::kCompute).synchronize();
  if (faults_.fires(DeviceFaultKind::kCopy, op)) {
    throw DeviceError(op, name() + ": " + op + " failed: the copy of " + std::to_string(bytes) + " bytes " + direction +
                              " was not made " + faults_.origin());
  }
}

bool SimulatedGpuDevice::async_copy_fails(const char* op, std::size_t bytes, const char* direction, Stream& stream) {
  if (!faults_.fires(DeviceFaultKind::kCopy, op)) return false;
  const std::exception_ptr error = std::make_exception_ptr(
      DeviceError(op, name() + ": " + op + " failed: the copy of " + std::to_string(bytes) + " bytes " + direction +
                          " on the " + stream_role_name(stream.role()) + " stream was not made " + faults_.origin() +
                          "; reported at the stream's next synchronization"));
  stream.launch_host_function([error] { std::rethrow_exception(error); });
  return true;
}

void SimulatedGpuDevice::fail_kernel(const char* op) {
  const std::exception_ptr error = std::make_exception_ptr(DeviceError(
      std::string("kernel ") + op, name() + ": kernel " + op + " failed on the compute stream " + faults_.origin() +
                                       "; reported at the stream's next synchronization after it"));
  streams_.by_role(StreamRole::kCompute).launch_host_function([error] { std::rethrow_exception(error); });
}

void SimulatedGpuDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  std::memmove(reach(dst, "SimulatedGpuDevice::copy"), reach(src, "SimulatedGpuDevice::copy"), bytes);
}

void SimulatedGpuDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check_host(host_dst, "SimulatedGpuDevice::copy_to_host");
  before_host_copy("copy_to_host", bytes, "from device to host memory");
  std::memcpy(host_dst, reach(src, "SimulatedGpuDevice::copy_to_host"), bytes);
}

void SimulatedGpuDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  check_host(host_src, "SimulatedGpuDevice::copy_from_host");
  before_host_copy("copy_from_host", bytes, "from host to device memory");
  std::memcpy(reach(dst, "SimulatedGpuDevice::copy_from_host"), host_src, bytes);
}

void SimulatedGpuDevice::fill_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  std::memset(reach(dst, "SimulatedGpuDevice::fill_zero"), 0, bytes);
}

void SimulatedGpuDevice::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) {
  if (bytes == 0) return;
  check_host(host_dst, "SimulatedGpuDevice::copy_to_host_async");
  const void* from = reach(src, "SimulatedGpuDevice::copy_to_host_async");
  if (&streams_.own(stream, "SimulatedGpuDevice::copy_to_host_async") == &streams_.copy())
    std::memset(host_dst, kCopyPendingByte, bytes);
  if (async_copy_fails("copy_to_host_async", bytes, "from device to host memory", stream)) return;
  stream.launch_host_function([=] { std::memcpy(host_dst, from, bytes); });
}

void SimulatedGpuDevice::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) {
  if (bytes == 0) return;
  check_host(host_src, "SimulatedGpuDevice::copy_from_host_async");
  void* to = reach(dst, "SimulatedGpuDevice::copy_from_host_async");
  if (&streams_.own(stream, "SimulatedGpuDevice::copy_from_host_async") == &streams_.copy())
    std::memset(to, kCopyPendingByte, bytes);
  if (async_copy_fails("copy_from_host_async", bytes, "from host to device memory", stream)) return;
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
