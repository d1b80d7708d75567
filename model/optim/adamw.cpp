// AdamW step over a parameter list through the device's adamw_update kernel.
#include "tessera/model/optim/adamw.hpp"

#include <cmath>

#include "tessera/model/module.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera {

AdamWScalars adamw_scalars(const AdamWConfig& config, std::int64_t step, float lr, bool decay, float grad_scale) {
  AdamWScalars s;
  s.lr = lr;
  s.beta1 = config.beta1;
  s.beta2 = config.beta2;
  s.eps = config.eps;
  s.weight_decay = decay ? config.weight_decay : 0.0f;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta1), step));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta2), step));
  s.grad_scale = grad_scale;
  return s;
}

AdamW::AdamW(const AdamWConfig& config, std::vector<Parameter*> parameters)
    : config_(config), parameters_(std::move(parameters)), m_(parameters_.size()), v_(parameters_.size()) {}

void AdamW::step(Device& device, float lr, float grad_scale) {
  ++step_;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    if (!m_[i].defined()) {
      m_[i] = Tensor::zeros(device, p.shape, DType::kF32, MemoryCategory::kOptimizerState);
      v_[i] = Tensor::zeros(device, p.shape, DType::kF32, MemoryCategory::kOptimizerState);
    }
    const AdamWScalars s = adamw_scalars(config_, step_, lr, p.decay, grad_scale);
    device.kernels().adamw_update(p.value.data_as<float>(), require_grad(p).data_as<float>(), m_[i].data_as<float>(),
                                  v_[i].data_as<float>(), p.numel(), s);
  }
}

}  // namespace tessera
