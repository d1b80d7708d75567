// SpikeDetector: z-scores of the loss and the gradient norm against a window of accepted steps.
#include "tessera/training/spike_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

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

SpikeDetector::SpikeDetector(const SpikeConfig& config) : config_(config) { config_.validate(); }

bool SpikeDetector::Window::stands_out(double x, double z, double& deviations, double& mean) const {
  double sum = 0.0;
  for (double v : values) sum += v;
  mean = sum / static_cast<double>(values.size());
  double squares = 0.0;
  for (double v : values) squares += (v - mean) * (v - mean);
  const double spread = std::max(std::sqrt(squares / static_cast<double>(values.size())), 0.01 * std::fabs(mean));
  deviations = spread > 0.0 ? (x - mean) / spread : 0.0;
  return deviations > z;
}

bool SpikeDetector::is_spike(double loss, double grad_norm) {
  char text[200];
  if (!std::isfinite(loss)) {
    ++spikes_;
    last_reason_ = "the loss is not finite";
    return true;
  }
  if (static_cast<int>(losses_.values.size()) >= config_.warmup) {
    double deviations = 0.0, mean = 0.0;
    for (auto [window, value, name] :
         {std::tuple{&losses_, loss, "loss"}, std::tuple{&norms_, grad_norm, "gradient norm"}}) {
      if (window->stands_out(value, config_.z, deviations, mean)) {
        ++spikes_;
        std::snprintf(text, sizeof text,
                      "%s %.4g is %.1f standard deviations above the mean %.4g of the last %zu steps", name, value,
                      deviations, mean, window->values.size());
        last_reason_ = text;
        return true;
      }
    }
  }
  for (auto [window, value] : {std::pair{&losses_, loss}, std::pair{&norms_, grad_norm}}) {
    window->values.push_back(value);
    if (static_cast<int>(window->values.size()) > config_.window) window->values.pop_front();
  }
  return false;
}

}  // namespace tessera
