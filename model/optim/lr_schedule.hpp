// LrSchedule: linear warmup to the base rate, then cosine decay to min_lr_ratio * base at total_steps.
#pragma once

#include <cstdint>

namespace tessera {

struct LrSchedule {
  float base_lr = 3e-4f;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;
  float min_lr_ratio = 0.1f;

  // Learning rate for 0-based step `step`: (step+1)/warmup * base during warmup, then cosine.
  float lr_at(std::int64_t step) const;
};

}  // namespace tessera
