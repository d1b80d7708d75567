// Trainer: drives a ShardedEngine through optimizer steps and evaluations — the loop every
// training program shares (train_gpt, the benchmarks, embedding programs, the memory planner).
//
// train_step: zero the gradients; per micro-batch forward, fused softmax cross-entropy, loss
// gradient scaled by loss_scale / accumulation, backward (deferring the gradient reduction to the
// last micro-batch where the stage allows it); then the engine's step. The loss it returns is the
// mean over micro-batches, averaged over all ranks.
//
// Collective: every rank calls it with the same number of micro-batches of the same shape.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/local_trainer.hpp"
#include "sharding/sharded_engine.hpp"

namespace tessera {

class Trainer {
 public:
  explicit Trainer(ShardedEngine& engine) : engine_(engine) {}

  StepResult train_step(const std::vector<MicroBatch>& micro_batches, float lr);

  // Mean loss of `batch` on this rank, without gradients or state changes (validation). Collective
  // at stage 3 (the forward gathers units).
  float evaluate(const MicroBatch& batch);

  ShardedEngine& engine() { return engine_; }

 private:
  ShardedEngine& engine_;
};

}  // namespace tessera
