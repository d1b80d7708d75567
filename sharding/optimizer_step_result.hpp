// OptimizerStepResult: what ShardedEngine::step / skip_step report — the step's global gradient
// norm and whether the update was taken. Every rank gets the same values (the norm is summed across
// ranks in rank order), so every rank takes or skips the same steps.
#pragma once

namespace tessera {

struct OptimizerStepResult {
  double grad_norm = 0.0;  // global norm of the (unscaled) gradients, before clipping
  bool skipped = false;    // no update: a non-finite norm, or the driver called skip_step()
};

}  // namespace tessera
