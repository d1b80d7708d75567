// CustomModel: a model of your own for the memory planner — how to build it, what one micro-batch
// holds, and how one training step runs over it. The planner builds the model, wraps it in the real
// ShardedEngine on the meta device and runs the step twice (a warm-up, then the measured step), so
// whatever the model, its loss and the engine allocate is counted, category by category, as a real
// run's MemoryTracker counts it.
//
//   CustomModel m;
//   m.build = [] { return std::make_unique<MyModel>(...); };  // parameters not materialised
//   m.batch = {{"inputs", {64}, DType::kI32, 1000},           // one sample: (64) token ids < 1000
//              {"targets", {64, 8}, DType::kF32}};            // and (64,8) f32 values
//   m.step = [](ShardedEngine& engine, const std::vector<MicroBatchTensors>& micro_batches, float lr) {
//     ...  // zero_grad, per micro-batch forward, loss, backward; step — as the run's loop does
//   };
//   PlanConfig c = PlanConfig::for_run(model_from_module("my model", m), sharding, batch_plan);
//   MemoryPlan plan = plan_memory(c);
//
// The step is the caller's training step: it must allocate what the run's step allocates (the loss's
// buffers, the gradients it seeds backward with) and free it as the run does; the micro-batches it is
// given are held by the planner through the step, as a training loop holds its batches. An empty step
// is the shipped token path: Trainer::train_step, the micro-batch (inputs, targets) (B,T) i32, the model
// returning (B,T,V) logits for the fused softmax cross-entropy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/runtime/tensor.hpp"

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

// One micro-batch's tensors, in the order of CustomModel::batch.
using MicroBatchTensors = std::vector<Tensor>;

// One optimizer step on `engine` over `micro_batches` (every rank's alike, accumulation of them),
// at learning rate `lr`. The planner calls it on the meta device (kernels do nothing, copies to the
// host leave the host buffer as it was), a measurement on a real one.
using PlanStepFunction =
    std::function<void(ShardedEngine& engine, const std::vector<MicroBatchTensors>& micro_batches, float lr)>;

struct CustomModel {
  // Builds the model with its parameters registered but not materialised (the engine gives them
  // storage): called once per plan and once for the parameter count.
  std::function<std::unique_ptr<Module>()> build;
  std::vector<BatchTensorSpec> batch;  // what one micro-batch holds, per sample
  PlanStepFunction step;               // empty: the token path (token_step)
};

// The token path's micro-batch: inputs and targets, (seq_len) i32 ids below `vocab` per sample.
std::vector<BatchTensorSpec> token_batch(std::int64_t seq_len, std::int64_t vocab);

// The token path's step: Trainer::train_step over MicroBatch{tensors[0], tensors[1]} (fused softmax
// cross-entropy on the model's (B,T,V) logits). Throws std::invalid_argument for a micro-batch that
// is not two tensors.
PlanStepFunction token_step();

// Throws std::invalid_argument naming `model` and what to change when the model cannot be planned:
// no build function, no batch tensor, a dimension below 1.
void validate_custom_model(const CustomModel& model, const std::string& name);

}  // namespace tessera
