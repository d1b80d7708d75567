// The backend registry: a table filled by the backends' file-level registrations (static
// initialisation, before main), read by make_device.
#include "tessera/runtime/device_registry.hpp"

#include <array>

namespace tessera {
namespace {

constexpr std::size_t kChoiceCount = 5;

// Indexed by DeviceChoice; an entry whose make is null is a backend this build does not have.
std::array<DeviceBackend, kChoiceCount>& registry() {
  static std::array<DeviceBackend, kChoiceCount> backends{};
  return backends;
}

// Refers to every registration that must be linked, so that a static link keeps its object file
// (a backend built only with its toolkit adds its registration here under its build flag).
[[gnu::used]] const DeviceRegistration* const kLinkedRegistrations[] = {
    &detail::kCpuDeviceRegistration,
    &detail::kMetaDeviceRegistration,
    &detail::kSimulatedGpuDeviceRegistration,
#if defined(TESSERA_HAVE_CUDA)
    &detail::kCudaDeviceRegistration,
#endif
};

}  // namespace

DeviceRegistration::DeviceRegistration(const DeviceBackend& backend) {
  registry()[static_cast<std::size_t>(backend.choice)] = backend;
}

const DeviceBackend* find_device_backend(DeviceChoice choice) {
  const DeviceBackend& backend = registry()[static_cast<std::size_t>(choice)];
  return backend.make != nullptr ? &backend : nullptr;
}

}  // namespace tessera
