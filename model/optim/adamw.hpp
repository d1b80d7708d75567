// AdamW (decoupled weight decay, bias-corrected moments) over a fixed list of parameters.
// State m and v are f32 tensors (category kOptimizerState) allocated on the first step.
// Sharded engines reuse adamw_scalars() and the device's adamw_update kernel on their own shards.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/model/parameter.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

class Device;

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // applied only to parameters with decay == true
};

// Scalars for step number `step` (1-based) at learning rate `lr`; weight decay only when `decay`;
// the gradients multiplied by `grad_scale` inside the update (AdamWScalars::grad_scale).
AdamWScalars adamw_scalars(const AdamWConfig& config, std::int64_t step, float lr, bool decay, float grad_scale = 1.0f);

class AdamW {
 public:
  AdamW(const AdamWConfig& config, std::vector<Parameter*> parameters);

  // One update of every parameter from its grad * grad_scale at learning rate `lr` (the clipping
  // factor goes here instead of into a pass over the gradients; the grads are not changed).
  void step(Device& device, float lr, float grad_scale = 1.0f);

  const AdamWConfig& config() const { return config_; }
  // Moments of parameter i (undefined before the first step).
  Tensor& first_moment(std::size_t i) { return m_[i]; }
  Tensor& second_moment(std::size_t i) { return v_[i]; }

 private:
  AdamWConfig config_;
  std::vector<Parameter*> parameters_;
  std::vector<Tensor> m_, v_;
  std::int64_t step_ = 0;
};

}  // namespace tessera
