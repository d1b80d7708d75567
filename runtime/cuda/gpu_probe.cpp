// probe_gpus: cudaGetDeviceCount, decoded with the driver's version.
#include "tessera/runtime/cuda/gpu_probe.hpp"

#include <cuda_runtime.h>

namespace tessera {
namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

GpuProbe probe_gpus() {
  GpuProbe probe;
  try {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error == cudaSuccess && count > 0) {
      probe.count = count;
      return probe;
    }
    cudaGetLastError();
    const std::string decoded = error == cudaSuccess ? std::string("cudaGetDeviceCount: 0 devices")
                                                     : std::string("cudaGetDeviceCount: ") + cudaGetErrorName(error) +
                                                           ": " + cudaGetErrorString(error);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0) {
      probe.reason = "no NVIDIA driver is loaded (" + decoded + ")";
    } else if (error == cudaErrorInsufficientDriver) {
      probe.reason = "the NVIDIA driver supports CUDA " + version_text(driver) + " but this build needs CUDA " +
                     version_text(runtime) + " (" + decoded + ")";
    } else if (error == cudaErrorNoDevice || error == cudaSuccess) {
      probe.reason = "no GPU is visible (" + decoded + "; check CUDA_VISIBLE_DEVICES)";
    } else {
      probe.reason = decoded;
    }
  } catch (...) {
    probe.reason = "probing the GPUs failed";
  }
  return probe;
}

}  // namespace tessera
