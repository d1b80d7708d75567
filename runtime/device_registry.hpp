// The device backends this build has, keyed by DeviceChoice. A backend registers itself at file
// level in its own source file:
//   namespace detail {
//   const DeviceRegistration kCpuDeviceRegistration(DeviceBackend{DeviceChoice::kCpu, "cpu", count, reason, make});
//   }
// A backend that is not built is simply not registered. The library is static, and a linker leaves
// out an object file nothing refers to, registration and all: the registrations are therefore
// named in device_registry.cpp (the always-built ones unconditionally, an optional one under its
// build flag, at file level).
#pragma once

#include <memory>
#include <string>

#include "tessera/runtime/device_factory.hpp"

namespace tessera {

struct DeviceBackend {
  DeviceChoice choice;  // kCpu, kCuda or kMeta (never kAuto)
  const char* name;
  // How many devices of this backend the process can use (a GPU backend: 0 when the driver does
  // not answer or no GPU is visible); never throws. usable() is count() > 0.
  int (*count)();
  // Why count() is 0, in words ("no NVIDIA driver is loaded (...)"); never throws.
  std::string (*unusable_reason)();
  std::unique_ptr<Device> (*make)(const DeviceOptions& options);

  bool usable() const { return count != nullptr && count() > 0; }
};

class DeviceRegistration {
 public:
  explicit DeviceRegistration(const DeviceBackend& backend);
};

// The registered backend for `choice` (not kAuto), or null when this build has none.
const DeviceBackend* find_device_backend(DeviceChoice choice);

namespace detail {
// Defined by the always-built backends (runtime/cpu/cpu_device.cpp, runtime/meta/meta_device.cpp,
// runtime/simulated/simulated_gpu_device.cpp)
// and, in a build with CUDA (TESSERA_HAVE_CUDA), runtime/cuda/cuda_device.cpp.
extern const DeviceRegistration kCpuDeviceRegistration;
extern const DeviceRegistration kMetaDeviceRegistration;
extern const DeviceRegistration kSimulatedGpuDeviceRegistration;
extern const DeviceRegistration kCudaDeviceRegistration;
}  // namespace detail

}  // namespace tessera
