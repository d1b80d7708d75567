// StepResult: one training step as a trainer reports it — the engine's optimizer step (gradient
// norm, taken or skipped) with the step's loss and whether a spike guard skipped it.
#pragma once

#include "tessera/sharding/optimizer_step_result.hpp"

namespace tessera {

struct StepResult {
  float loss = 0.0f;       // mean loss over the step's micro-batches (and ranks)
  double grad_norm = 0.0;  // global norm before clipping
  bool skipped = false;    // the step was skipped (non-finite gradients, or a spike)
  bool spike = false;      // skipped because its loss or gradient norm was an outlier

  StepResult() = default;
  StepResult(float step_loss, const OptimizerStepResult& step, bool is_spike = false)
      : loss(step_loss), grad_norm(step.grad_norm), skipped(step.skipped), spike(is_spike) {}
};

}  // namespace tessera
