// LocalTrainer: one process trains a Module with AdamW — forward, fused cross-entropy, backward
// over the micro-batches of one step (gradient accumulation), global-norm clipping, AdamW.
// The sharded engine offers the same step shape across ranks; tests use this one as the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/module.hpp"
#include "runtime/optim/adamw.hpp"

namespace tessera {

struct MicroBatch {
  Tensor inputs;   // (B,T) i32
  Tensor targets;  // (B,T) i32
};

struct StepResult {
  float loss = 0.0f;        // mean loss over the step's micro-batches
  double grad_norm = 0.0;   // global norm before clipping
  bool skipped = false;     // the step was skipped (non-finite gradients, or a spike)
  bool spike = false;       // skipped because its loss or gradient norm was an outlier
};

class LocalTrainer {
 public:
  // `model` must be materialised on `device`. grad_clip <= 0 disables clipping.
  LocalTrainer(Module& model, Device& device, const AdamWConfig& adamw, float grad_clip);

  // Accumulates gradients over `micro_batches` (loss scaled by 1/count), clips, and updates at `lr`.
  StepResult step(const std::vector<MicroBatch>& micro_batches, float lr);

  // Mean loss of `batch` without touching gradients or optimizer state.
  float evaluate(const MicroBatch& batch);

  AdamW& optimizer() { return optimizer_; }

 private:
  Module& model_;
  Device& device_;
  std::vector<Parameter*> parameters_;
  AdamW optimizer_;
  float grad_clip_;
};

}  // namespace tessera
