// Warmup + cosine learning-rate schedule.
#include "tessera/model/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace tessera {

float LrSchedule::lr_at(std::int64_t step) const {
  if (step < warmup_steps) {
    return base_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
  }
  const std::int64_t decay_steps = std::max<std::int64_t>(1, total_steps - warmup_steps);
  const double progress = std::clamp(static_cast<double>(step - warmup_steps) / decay_steps, 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  const double min_lr = static_cast<double>(base_lr) * min_lr_ratio;
  return static_cast<float>(min_lr + (base_lr - min_lr) * cosine);
}

}  // namespace tessera
