// Gradient norm and clipping through the device's sum_squares and scale kernels; the per-parameter
// sums come back to the host in one copy.
#include "tessera/model/optim/grad_clip.hpp"

#include <cmath>

#include "tessera/model/module.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {

double grad_sum_squares(Device& device, const std::vector<Parameter*>& parameters) {
  if (parameters.empty()) return 0.0;
  // One partial sum per parameter in a device buffer, one copy to the host, added in parameter order.
  const std::size_t bytes = parameters.size() * sizeof(double);
  auto partials = Storage::allocate(device, bytes, MemoryCategory::kWorkspace);
  auto* device_partials = static_cast<double*>(partials->data());
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    Parameter* p = parameters[i];
    device.kernels().sum_squares(require_grad(*p).data_as<float>(), p->numel(),
                                 device_partials == nullptr ? nullptr : device_partials + i);
  }
  std::vector<double> host(parameters.size(), 0.0);
  device.copy_to_host(host.data(), partials->data(), bytes);
  double sum = 0.0;
  for (double partial : host) sum += partial;
  return sum;
}

float clip_coefficient(double norm, float max_norm) {
  if (max_norm <= 0.0f || !std::isfinite(norm)) return 1.0f;
  const double c = static_cast<double>(max_norm) / (norm + 1e-6);
  return c < 1.0 ? static_cast<float>(c) : 1.0f;
}

double clip_grad_norm(Device& device, const std::vector<Parameter*>& parameters, float max_norm) {
  const double norm = std::sqrt(grad_sum_squares(device, parameters));
  const float c = clip_coefficient(norm, max_norm);
  if (c < 1.0f) {
    for (Parameter* p : parameters) device.kernels().scale(p->grad.data_as<float>(), c, p->numel());
  }
  return norm;
}

}  // namespace tessera
