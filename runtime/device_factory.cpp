// make_device and parse_device_choice over the backend registry (runtime/device_registry.hpp).
#include "runtime/device_factory.hpp"

#include <stdexcept>
#include <string>

#include "runtime/device_registry.hpp"

namespace tessera {
namespace {

bool usable(DeviceChoice choice) {
  const DeviceBackend* backend = find_device_backend(choice);
  return backend != nullptr && backend->usable();
}

}  // namespace

const char* device_choice_name(DeviceChoice choice) {
  switch (choice) {
    case DeviceChoice::kAuto: return "auto";
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
    case DeviceChoice::kMeta: return "meta";
  }
  return "unknown";
}

DeviceChoice parse_device_choice(std::string_view text) {
  for (DeviceChoice c : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kCuda, DeviceChoice::kMeta}) {
    if (text == device_choice_name(c)) return c;
  }
  throw std::invalid_argument("device: unknown value '" + std::string(text) +
                              "'; use one of auto, cpu, cuda, meta");
}

bool device_available(DeviceChoice choice) { return choice == DeviceChoice::kAuto || usable(choice); }

std::unique_ptr<Device> make_device(DeviceChoice choice) {
  if (choice == DeviceChoice::kAuto) choice = usable(DeviceChoice::kCuda) ? DeviceChoice::kCuda : DeviceChoice::kCpu;
  const DeviceBackend* backend = find_device_backend(choice);
  if (backend == nullptr && choice == DeviceChoice::kCuda) {
    throw std::runtime_error("device cuda: this build has no CUDA device backend yet; use the cpu device");
  }
  if (backend == nullptr) {
    throw std::logic_error(std::string("device ") + device_choice_name(choice) + ": backend not registered");
  }
  if (!backend->usable()) {
    throw std::runtime_error(std::string("device ") + backend->name +
                             ": no usable device found (check the driver and the visible devices), or use the "
                             "cpu device");
  }
  return backend->make();
}

}  // namespace tessera
