// Device: where tensors live and kernels run. Owns the memory tracker of its memory.
// CPU is always built (runtime/cpu/); CUDA is registered when built (runtime/cuda/).
// Modules never touch raw pointers' memory directly: they call device.kernels() and device copies,
// so the same module code runs on any device.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/memory_tracker.hpp"

namespace tessera {

class Kernels;

enum class DeviceKind { kCpu, kCuda };

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;

  // Raw memory of this device; untracked (Storage does the tracking). Alignment >= 64 bytes.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) noexcept = 0;

  // Copies within this device, or between this device and host memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;

  // Waits until every kernel and copy issued on this device has finished.
  virtual void synchronize() = 0;

  virtual const Kernels& kernels() const = 0;

  MemoryTracker& memory() { return memory_; }
  const MemoryTracker& memory() const { return memory_; }

 private:
  MemoryTracker memory_;
};

// The CPU device (OpenBLAS + OpenMP). Each call makes a new device with its own tracker.
std::unique_ptr<Device> make_cpu_device();

// Sets the OpenMP and OpenBLAS thread counts used by CPU kernels (0 = leave the default).
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace tessera
