// make_device: the device a program runs on, chosen at run time from the backends this build has.
//   auto device = make_device(parse_device_choice("auto"));  // CUDA when built and a GPU is usable, else CPU
// Choices: auto, cpu, cuda, meta (sizes only, no memory: runtime/meta/meta_device.hpp).
#pragma once

#include <memory>
#include <string_view>

#include "runtime/device.hpp"

namespace tessera {

enum class DeviceChoice { kAuto, kCpu, kCuda, kMeta };

const char* device_choice_name(DeviceChoice choice);  // "auto", "cpu", "cuda", "meta"

// Parses "auto", "cpu", "cuda" or "meta"; anything else throws std::invalid_argument naming the
// setting (device), the value and the accepted values.
DeviceChoice parse_device_choice(std::string_view text);

// kAuto: the CUDA device when this build has one and a GPU is usable, otherwise the CPU device.
// kCuda: throws std::runtime_error when this build has no CUDA device backend or no GPU is usable.
// Each call makes a new device with its own memory trackers.
std::unique_ptr<Device> make_device(DeviceChoice choice);

// True when make_device(choice) would give a device (kAuto: always).
bool device_available(DeviceChoice choice);

}  // namespace tessera
