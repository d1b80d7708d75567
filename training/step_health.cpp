// StepHealth: the loss band that decides a checkpoint's health mark.
#include "tessera/training/step_health.hpp"

#include <cmath>
#include <cstdio>

namespace tessera {

StepHealth::StepHealth(const SpikeConfig& band) : config_(band), losses_(band.window) { band.validate(); }

StepHealthVerdict StepHealth::judge(const StepResult& step) {
  StepHealthVerdict verdict;
  if (step.spike) {  // the guard judged the batch an outlier and left the weights as they were
    verdict.state_after_healthy = last_state_healthy_;
    return verdict;
  }
  char text[192];
  if (!std::isfinite(step.loss)) {
    verdict.state_before_healthy = false;
    verdict.reason = "the loss is not finite";
  } else {
    const double floor = static_cast<int>(losses_.size()) < config_.warmup ? 0.1 : 0.01;
    const double deviations = losses_.deviations(step.loss, floor);
    if (deviations > config_.z) {
      verdict.state_before_healthy = false;
      std::snprintf(text, sizeof text, "the loss %.4g is %.3g spreads above the mean %.4g of the last %zu healthy steps",
                    static_cast<double>(step.loss), deviations, losses_.mean(), losses_.size());
      verdict.reason = text;
    }
  }
  verdict.state_after_healthy = verdict.state_before_healthy && !step.skipped && std::isfinite(step.grad_norm);
  if (verdict.state_before_healthy && !verdict.state_after_healthy) {
    verdict.reason = std::isfinite(step.grad_norm) ? "the step was skipped" : "the gradient norm is not finite";
  }
  if (verdict.state_after_healthy) losses_.accept(step.loss);
  last_state_healthy_ = verdict.state_after_healthy;
  return verdict;
}

}  // namespace tessera
