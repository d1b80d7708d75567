// CustomModel: a model of your own for the memory planner — how to build it, what one micro-batch
// holds and which loss trains it. The planner builds the model, wraps it in the real ShardedEngine on
// the meta device and runs the run's step twice (a warm-up, then the measured step) — the Trainer's
// train_step with that Loss, as TrainingRun runs it — so whatever the model, its loss and the engine
// allocate is counted, category by category, as a real run's MemoryTracker counts it.
//
//   CustomModel m;
//   m.build = [] { return std::make_unique<MyModel>(...); };  // parameters not materialised
//   m.batch = {{"inputs", {64}, DType::kI32, 1000},           // one sample: (64) token ids < 1000
//              {"targets", {64, 8}, DType::kF32}};            // and (64,8) f32 values
//   m.loss = std::make_shared<MeanSquaredError>();            // TrainingRunOptions::loss of the run
//   PlanConfig c = PlanConfig::for_run(model_from_module("my model", m), sharding, batch_plan);
//   MemoryPlan plan = plan_memory(c);
//
// The batch's tensors named "inputs" and "targets" are the MicroBatch's; any other goes to its
// `extra` by name. A program with a training step of its own (not Trainer::train_step) gives it as
// `step`: it must allocate what the run's step allocates and free it as the run does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tessera/training/loss.hpp"
#include "tessera/training/micro_batch.hpp"

namespace tessera {

class ShardedEngine;

// One tensor of a micro-batch, by the shape of one sample: the micro-batch's tensor is
// (B, sample_shape...) for a micro-batch of B samples.
struct BatchTensorSpec {
  std::string name;    // "inputs", "targets", "mask": how messages name it
  Shape sample_shape;  // one sample's shape; may be empty (one value per sample)
  DType dtype = DType::kF32;
  // i32 ids (tokens, classes): a measurement on a real device (measure_engine_step) draws them in
  // [0, id_bound) and needs it. The planner reads no values; 0 for floating tensors.
  std::int64_t id_bound = 0;

  Shape micro_batch_shape(std::int64_t micro_batch) const;  // (micro_batch, sample_shape...)
};

// One optimizer step on `engine` over `micro_batches` (every rank's alike, accumulation of them),
// at learning rate `lr`. The planner calls it on the meta device (kernels do nothing, copies to the
// host leave the host buffer as it was), a measurement on a real one.
using PlanStepFunction =
    std::function<void(ShardedEngine& engine, const std::vector<MicroBatch>& micro_batches, float lr)>;

struct CustomModel {
  // Builds the model with its parameters registered but not materialised (the engine gives them
  // storage): called once per plan and once for the parameter count.
  std::function<std::unique_ptr<Module>()> build;
  std::vector<BatchTensorSpec> batch;  // what one micro-batch holds, per sample: "inputs" at least
  std::shared_ptr<Loss> loss;          // the run's loss; null: TokenCrossEntropy
  PlanStepFunction step;               // a step of the program's own; empty: trainer_step(loss)
};

// The token path's micro-batch: inputs and targets, (seq_len) i32 ids below `vocab` per sample.
std::vector<BatchTensorSpec> token_batch(std::int64_t seq_len, std::int64_t vocab);

// The step TrainingRun takes: Trainer(engine, loss).train_step (null loss: TokenCrossEntropy).
PlanStepFunction trainer_step(std::shared_ptr<Loss> loss);

// The micro-batch of `tensors` (one per spec, in order): "inputs" and "targets" by name, the rest
// in `extra`.
MicroBatch micro_batch_of(const std::vector<BatchTensorSpec>& specs, std::vector<Tensor> tensors);

// Throws std::invalid_argument naming `model` and what to change when the model cannot be planned:
// no build function, no "inputs" tensor, a name given twice, a dimension below 1.
void validate_custom_model(const CustomModel& model, const std::string& name);

}  // namespace tessera
