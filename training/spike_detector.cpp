// SpikeDetector: z-scores of the loss and the gradient norm against a window of accepted steps.
#include "tessera/training/spike_detector.hpp"

#include <cmath>
#include <cstdio>
#include <tuple>

#include "tessera/core/setting_error.hpp"

namespace tessera {

void SpikeConfig::validate() const {
  if (window < 2) throw SettingError("spike.window", std::to_string(window), "must be >= 2 steps");
  if (warmup < 2 || warmup > window) {
    throw SettingError("spike.warmup", std::to_string(warmup),
                       "must be between 2 and the window (" + std::to_string(window) + ")");
  }
  if (!(z > 0.0) || !std::isfinite(z)) throw SettingError("spike.z", std::to_string(z), "must be a positive number");
}

SpikeDetector::SpikeDetector(const SpikeConfig& config)
    : config_(config), losses_(config.window), norms_(config.window) {
  config_.validate();
}

bool SpikeDetector::is_spike(double loss, double grad_norm) {
  char text[200];
  if (!std::isfinite(loss)) {
    ++spikes_;
    last_reason_ = "the loss is not finite";
    return true;
  }
  if (static_cast<int>(losses_.size()) >= config_.warmup) {
    for (auto [band, value, name] :
         {std::tuple{&losses_, loss, "loss"}, std::tuple{&norms_, grad_norm, "gradient norm"}}) {
      const double deviations = band->deviations(value);
      if (deviations > config_.z) {
        ++spikes_;
        std::snprintf(text, sizeof text,
                      "%s %.4g is %.1f standard deviations above the mean %.4g of the last %zu steps", name, value,
                      deviations, band->mean(), band->size());
        last_reason_ = text;
        return true;
      }
    }
  }
  losses_.accept(loss);
  norms_.accept(grad_norm);
  return false;
}

}  // namespace tessera
