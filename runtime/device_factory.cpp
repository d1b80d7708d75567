// make_device and parse_device_choice over the backend registry (runtime/device_registry.hpp).
#include "tessera/runtime/device_factory.hpp"

#include <stdexcept>
#include <string>

#include "tessera/runtime/device_registry.hpp"

namespace tessera {
namespace {

bool usable(DeviceChoice choice) {
  const DeviceBackend* backend = find_device_backend(choice);
  return backend != nullptr && backend->usable();
}

constexpr const char* kNoCudaBackend =
    "this build has no CUDA device backend (it was configured without CUDA: -DTESSERA_CUDA=ON needs nvcc, "
    "cuBLAS and NCCL)";

}  // namespace

const char* device_choice_name(DeviceChoice choice) {
  switch (choice) {
    case DeviceChoice::kAuto: return "auto";
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
    case DeviceChoice::kMeta: return "meta";
    case DeviceChoice::kSimulatedGpu: return "sim-gpu";
  }
  return "unknown";
}

DeviceChoice parse_device_choice(std::string_view text) {
  for (DeviceChoice c : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kCuda, DeviceChoice::kMeta,
                         DeviceChoice::kSimulatedGpu}) {
    if (text == device_choice_name(c)) return c;
  }
  throw std::invalid_argument("device: unknown value '" + std::string(text) +
                              "'; use one of auto, cpu, cuda, meta, sim-gpu");
}

bool device_available(DeviceChoice choice) { return choice == DeviceChoice::kAuto || usable(choice); }

DeviceChoice resolve_device_choice(DeviceChoice choice) {
  if (choice != DeviceChoice::kAuto) return choice;
  return usable(DeviceChoice::kCuda) ? DeviceChoice::kCuda : DeviceChoice::kCpu;
}

int device_count(DeviceChoice choice) {
  const DeviceBackend* backend = find_device_backend(resolve_device_choice(choice));
  return backend != nullptr && backend->count != nullptr ? backend->count() : 0;
}

std::string device_unavailable_reason(DeviceChoice choice) {
  choice = resolve_device_choice(choice);
  const DeviceBackend* backend = find_device_backend(choice);
  if (backend == nullptr) {
    return choice == DeviceChoice::kCuda ? kNoCudaBackend : "backend not registered in this build";
  }
  if (backend->usable()) return "";
  const std::string reason = backend->unusable_reason != nullptr ? backend->unusable_reason() : "";
  return choice == DeviceChoice::kCuda ? "no usable GPU (" + reason + ")" : reason;
}

std::unique_ptr<Device> make_device(DeviceChoice choice, const DeviceOptions& options) {
  choice = resolve_device_choice(choice);
  const DeviceBackend* backend = find_device_backend(choice);
  if (backend == nullptr && choice == DeviceChoice::kCuda) {
    throw std::runtime_error(std::string("device cuda: ") + kNoCudaBackend + "; use the cpu device");
  }
  if (backend == nullptr) {
    throw std::logic_error(std::string("device ") + device_choice_name(choice) + ": backend not registered");
  }
  if (!backend->usable()) {
    throw std::runtime_error(std::string("device ") + backend->name + ": " + device_unavailable_reason(choice) +
                             "; use the cpu device");
  }
  return backend->make(options);
}

}  // namespace tessera
