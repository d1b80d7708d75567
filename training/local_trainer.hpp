// LocalTrainer: one process trains a Module with AdamW — forward, fused cross-entropy, backward
// over the micro-batches of one step (gradient accumulation), global-norm clipping, AdamW.
// The sharded engine offers the same step shape across ranks; tests use this one as the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/model/optim/adamw.hpp"
#include "tessera/training/micro_batch.hpp"
#include "tessera/training/step_result.hpp"

namespace tessera {

class LocalTrainer {
 public:
  // `model` must be materialised on `device`. grad_clip <= 0 disables clipping.
  LocalTrainer(Module& model, Device& device, const AdamWConfig& adamw, float grad_clip);

  // Accumulates gradients over `micro_batches` (loss scaled by 1/count), clips, and updates at `lr`.
  StepResult step(const std::vector<MicroBatch>& micro_batches, float lr);

  // Mean loss of `batch` without touching gradients or optimizer state.
  float evaluate(const MicroBatch& batch);

 private:
  Module& model_;
  Device& device_;
  std::vector<Parameter*> parameters_;
  AdamW optimizer_;
  float grad_clip_;
};

}  // namespace tessera
