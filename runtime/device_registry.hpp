// The device backends this build has, keyed by DeviceChoice. A backend registers itself at file
// level in its own source file:
//   namespace detail {
//   const DeviceRegistration kCpuDeviceRegistration(DeviceBackend{DeviceChoice::kCpu, "cpu", usable, make});
//   }
// A backend that is not built is simply not registered. The library is static, and a linker leaves
// out an object file nothing refers to, registration and all: the registrations are therefore
// named in device_registry.cpp (the always-built ones unconditionally, an optional one under its
// build flag, at file level).
#pragma once

#include <memory>

#include "runtime/device_factory.hpp"

namespace tessera {

struct DeviceBackend {
  DeviceChoice choice;  // kCpu, kCuda or kMeta (never kAuto)
  const char* name;
  bool (*usable)();  // e.g. a GPU is present and the driver answers; never throws
  std::unique_ptr<Device> (*make)();
};

class DeviceRegistration {
 public:
  explicit DeviceRegistration(const DeviceBackend& backend);
};

// The registered backend for `choice` (not kAuto), or null when this build has none.
const DeviceBackend* find_device_backend(DeviceChoice choice);

namespace detail {
// Defined by the always-built backends (runtime/cpu/cpu_device.cpp, runtime/meta/meta_device.cpp).
extern const DeviceRegistration kCpuDeviceRegistration;
extern const DeviceRegistration kMetaDeviceRegistration;
}  // namespace detail

}  // namespace tessera
