// CustomModel: the token path's batch and step, and the checks a custom model must pass.
#include "tessera/planning/custom_model.hpp"

#include <stdexcept>

#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {

Shape BatchTensorSpec::micro_batch_shape(std::int64_t micro_batch) const {
  Shape shape{micro_batch};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return shape;
}

std::vector<BatchTensorSpec> token_batch(std::int64_t seq_len, std::int64_t vocab) {
  return {{"inputs", {seq_len}, DType::kI32, vocab}, {"targets", {seq_len}, DType::kI32, vocab}};
}

PlanStepFunction token_step() {
  return [](ShardedEngine& engine, const std::vector<MicroBatchTensors>& micro_batches, float lr) {
    std::vector<MicroBatch> batches;
    batches.reserve(micro_batches.size());
    for (const MicroBatchTensors& tensors : micro_batches) {
      if (tensors.size() != 2) {
        throw std::invalid_argument("the token step takes micro-batches of two tensors (inputs, targets), got " +
                                    std::to_string(tensors.size()) +
                                    ": give CustomModel::step for a batch of another form");
      }
      batches.push_back({tensors[0], tensors[1]});
    }
    Trainer(engine).train_step(batches, lr);
  };
}

void validate_custom_model(const CustomModel& model, const std::string& name) {
  const std::string who = "model '" + name + "'";
  if (!model.build) throw std::invalid_argument(who + ": CustomModel::build is empty: give a function that builds it");
  if (model.batch.empty()) {
    throw std::invalid_argument(who + ": CustomModel::batch is empty: list the tensors of one micro-batch");
  }
  for (const BatchTensorSpec& t : model.batch) {
    for (std::int64_t d : t.sample_shape) {
      if (d < 1) {
        throw std::invalid_argument(who + ": batch tensor '" + t.name + "' has a dimension " + std::to_string(d) +
                                    ": every dimension of a sample must be >= 1");
      }
    }
  }
}

}  // namespace tessera
