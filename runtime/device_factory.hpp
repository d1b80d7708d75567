// make_device: the device a program runs on, chosen at run time from the backends this build has.
//   auto device = make_device(parse_device_choice("auto"));  // CUDA when built and a GPU is usable, else CPU
//   auto gpu = make_device(DeviceChoice::kCuda, {.index = 1, .gemm_math = GemmMath::kTf32});
// Choices: auto, cpu, cuda, meta (sizes only, no memory: runtime/meta/meta_device.hpp), sim-gpu (a
// discrete device simulated on the CPU, for tests: runtime/simulated/simulated_gpu_device.hpp). A program
// of several ranks picks each rank's GPU from its local rank: make_rank_device (launch/rank_device.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/gemm_math.hpp"

namespace tessera {

enum class DeviceChoice { kAuto, kCpu, kCuda, kMeta, kSimulatedGpu };

const char* device_choice_name(DeviceChoice choice);  // "auto", "cpu", "cuda", "meta", "sim-gpu"

// Parses "auto", "cpu", "cuda", "meta" or "sim-gpu"; anything else throws std::invalid_argument naming the
// setting (device), the value and the accepted values.
DeviceChoice parse_device_choice(std::string_view text);

// What a backend needs beyond the choice; the CPU and meta devices ignore both fields.
struct DeviceOptions {
  int index = -1;                       // CUDA: which visible GPU (0 .. device_count - 1); -1: GPU 0
  GemmMath gemm_math = GemmMath::kF32;  // CUDA: the GEMMs' arithmetic (runtime/gemm_math.hpp)
};

// kAuto: the CUDA device when this build has one and a GPU is usable, otherwise the CPU device.
// kCuda: throws std::runtime_error in one line when this build has no CUDA device backend or no
// GPU is usable, naming the reason ("device cuda: no usable GPU (no NVIDIA driver is loaded ...);
// use the cpu device"), and std::invalid_argument for an index outside the visible GPUs.
// Each call makes a new device with its own memory trackers.
std::unique_ptr<Device> make_device(DeviceChoice choice, const DeviceOptions& options = {});

// True when make_device(choice) would give a device (kAuto: always). Never throws.
bool device_available(DeviceChoice choice);

// What kAuto stands for in this process: kCuda when a GPU is usable, else kCpu; other choices as
// they are.
DeviceChoice resolve_device_choice(DeviceChoice choice);

// How many devices of `choice` this process can use (kCuda: the visible GPUs; kCpu and kMeta: 1;
// 0 when this build has no such backend). Never throws.
int device_count(DeviceChoice choice);

// Why make_device(choice) would fail, in words ("no usable GPU (...)"), or "" when it would not.
// Never throws.
std::string device_unavailable_reason(DeviceChoice choice);

}  // namespace tessera
