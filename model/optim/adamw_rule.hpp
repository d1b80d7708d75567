// AdamWRule: AdamW over a window of an optimizer range — exp_avg (m) and exp_avg_sq (v), f32, one
// per element — through the device's adamw_update kernel, one parameter segment at a time (weight
// decay only on segments whose parameter decays).
#pragma once

#include "tessera/model/optim/optimizer_state.hpp"

namespace tessera {

class AdamWRule final : public OptimizerRule {
 public:
  explicit AdamWRule(const AdamWConfig& config) : config_(config) {}

  std::vector<StateSpec> specs() const override { return static_specs(); }
  void update(const Kernels& kernels, float* master, const float* grads, std::span<std::byte* const> state,
              std::int64_t count, std::span<const ParamSegment> segments, float lr, std::int64_t step,
              float grad_scale) const override;

  static std::vector<StateSpec> static_specs();  // exp_avg, exp_avg_sq (f32)

 private:
  AdamWConfig config_;
};

}  // namespace tessera
