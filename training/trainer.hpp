// Trainer: drives a ShardedEngine through optimizer steps and evaluations — the loop every
// training program shares (train_gpt, the benchmarks, embedding programs, the memory planner).
//
// train_step: zero the gradients; per micro-batch forward, the loss (training/loss.hpp: the fused
// softmax cross-entropy of TokenCrossEntropy unless another is given), its gradient scaled by
// loss_scale / accumulation, backward (deferring the gradient reduction to the
// last micro-batch where the stage allows it); the loss averaged over all ranks; then the engine's
// step — or, with a SpikeDetector and a loss or gradient norm that stands out, no update at all on
// every rank (StepResult::spike). The loss it returns is the mean over micro-batches and ranks.
//
// Collective: every rank calls it with the same number of micro-batches of the same shape.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/loss.hpp"
#include "tessera/training/micro_batch.hpp"
#include "tessera/training/spike_detector.hpp"
#include "tessera/training/step_result.hpp"

namespace tessera {

class Trainer {
 public:
  // `loss`: what the steps minimise and evaluate() measures; null: TokenCrossEntropy.
  explicit Trainer(ShardedEngine& engine, std::shared_ptr<Loss> loss = nullptr);

  // Skip steps the detector calls spikes (nullptr: never). The detector must outlive its use.
  void set_spike_detector(SpikeDetector* detector) { detector_ = detector; }

  StepResult train_step(const std::vector<MicroBatch>& micro_batches, float lr);

  // Mean loss of `batch` on this rank, without gradients or state changes (validation). Collective
  // at stage 3 (the forward gathers units).
  float evaluate(const MicroBatch& batch);

  ShardedEngine& engine() { return engine_; }
  Loss& loss() { return *loss_; }

 private:
  ShardedEngine& engine_;
  std::shared_ptr<Loss> loss_;
  SpikeDetector* detector_ = nullptr;
};

}  // namespace tessera
