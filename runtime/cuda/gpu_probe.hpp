// probe_gpus: how many GPUs this process can use, and in words why none when there are none (no
// driver, a driver older than this build's CUDA runtime, no device visible). Never throws, so the
// device registry can ask it while choosing a device.
#pragma once

#include <string>

namespace tessera {

struct GpuProbe {
  int count = 0;       // visible GPUs (CUDA_VISIBLE_DEVICES applied)
  std::string reason;  // empty when count > 0, e.g. "no NVIDIA driver is loaded (cudaGetDeviceCount: ...)"
};

GpuProbe probe_gpus();

}  // namespace tessera
