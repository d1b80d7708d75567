// default_compute_dtype: bf16 on the CUDA device, f32 elsewhere.
#include "tessera/runtime/compute_dtype.hpp"

#include "tessera/runtime/device.hpp"

namespace tessera {

DType default_compute_dtype(const Device& device) {
  return device.kind() == DeviceKind::kCuda ? DType::kBF16 : DType::kF32;
}

}  // namespace tessera
