// Dynamic loss scale: backoff with hysteresis on overflow, growth after a run of clean steps.
#include "tessera/precision/loss_scaler.hpp"

#include <algorithm>

namespace tessera {

DynamicLossScaler::DynamicLossScaler(const LossScalerConfig& config)
    : config_(config), scale_(config.initial_scale), hysteresis_left_(config.hysteresis) {}

void DynamicLossScaler::update(bool found_inf) {
  if (found_inf) {
    good_steps_ = 0;
    if (--hysteresis_left_ <= 0) {
      scale_ = std::max(config_.min_scale, scale_ * config_.backoff_factor);
      hysteresis_left_ = config_.hysteresis;
    }
    return;
  }
  hysteresis_left_ = config_.hysteresis;
  if (++good_steps_ >= config_.growth_interval) {
    scale_ *= config_.growth_factor;
    good_steps_ = 0;
  }
}

void DynamicLossScaler::set_state(const State& s) {
  scale_ = s.scale;
  good_steps_ = s.good_steps;
  hysteresis_left_ = s.hysteresis_left;
}

}  // namespace tessera
