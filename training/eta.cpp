// EtaEstimator: a sliding mean of step times.
#include "tessera/training/eta.hpp"

#include <algorithm>

namespace tessera {

EtaEstimator::EtaEstimator(std::int64_t total_steps, int window)
    : total_steps_(total_steps), window_(static_cast<std::size_t>(std::max(1, window))) {}

void EtaEstimator::record(std::int64_t steps_done, double seconds) {
  steps_done_ = steps_done;
  recent_.push_back(seconds);
  recent_sum_ += seconds;
  if (recent_.size() > window_) {
    recent_sum_ -= recent_.front();
    recent_.pop_front();
  }
}

std::optional<double> EtaEstimator::seconds_per_step() const {
  if (recent_.empty()) return std::nullopt;
  return recent_sum_ / static_cast<double>(recent_.size());
}

std::optional<double> EtaEstimator::seconds_left() const {
  const std::optional<double> per_step = seconds_per_step();
  if (!per_step) return std::nullopt;
  return *per_step * static_cast<double>(std::max<std::int64_t>(0, total_steps_ - steps_done_));
}

}  // namespace tessera
