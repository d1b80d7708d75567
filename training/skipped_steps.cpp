// SkippedSteps: streak and total of skipped steps.
#include "tessera/training/skipped_steps.hpp"

#include <cstdio>

namespace tessera {

void SkippedSteps::record(const StepResult& result) {
  if (!result.skipped) {
    consecutive_ = 0;
    return;
  }
  ++total_;
  ++consecutive_;
}

bool SkippedSteps::report_now() const {
  if (consecutive_ == 0) return false;
  const bool power_of_two = (consecutive_ & (consecutive_ - 1)) == 0;
  return power_of_two || exhausted();
}

std::string skip_reason(const StepResult& result, const std::string& spike_reason) {
  if (result.spike) return "spike: " + spike_reason;
  char text[120];
  std::snprintf(text, sizeof text, "the gradients are not finite (loss %.4g, gradient norm %.4g)",
                static_cast<double>(result.loss), result.grad_norm);
  return text;
}

}  // namespace tessera
