// CustomModel: the token path's batch, the Trainer's step, a micro-batch from its tensors, and the
// checks a custom model must pass.
#include "tessera/planning/custom_model.hpp"

#include <algorithm>
#include <set>
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

PlanStepFunction trainer_step(std::shared_ptr<Loss> loss) {
  return [loss](ShardedEngine& engine, const std::vector<MicroBatch>& micro_batches, float lr) {
    Trainer(engine, loss).train_step(micro_batches, lr);
  };
}

MicroBatch micro_batch_of(const std::vector<BatchTensorSpec>& specs, std::vector<Tensor> tensors) {
  MicroBatch batch;
  for (std::size_t i = 0; i < specs.size() && i < tensors.size(); ++i) {
    if (specs[i].name == "inputs") {
      batch.inputs = std::move(tensors[i]);
    } else if (specs[i].name == "targets") {
      batch.targets = std::move(tensors[i]);
    } else {
      batch.extra[specs[i].name] = std::move(tensors[i]);
    }
  }
  return batch;
}

void validate_custom_model(const CustomModel& model, const std::string& name) {
  const std::string who = "model '" + name + "'";
  if (!model.build) throw std::invalid_argument(who + ": CustomModel::build is empty: give a function that builds it");
  if (model.batch.empty()) {
    throw std::invalid_argument(who + ": CustomModel::batch is empty: list the tensors of one micro-batch");
  }
  if (std::none_of(model.batch.begin(), model.batch.end(),
                   [](const BatchTensorSpec& t) { return t.name == "inputs"; })) {
    throw std::invalid_argument(who +
                                ": CustomModel::batch has no tensor named 'inputs': name the one the model's "
                                "forward takes 'inputs' (and the one the loss reads 'targets')");
  }
  std::set<std::string> names;
  for (const BatchTensorSpec& t : model.batch) {
    if (!names.insert(t.name).second) {
      throw std::invalid_argument(who + ": batch tensor '" + t.name +
                                  "' is listed twice: give each tensor its own name");
    }
    for (std::int64_t d : t.sample_shape) {
      if (d < 1) {
        throw std::invalid_argument(who + ": batch tensor '" + t.name + "' has a dimension " + std::to_string(d) +
                                    ": every dimension of a sample must be >= 1");
      }
    }
  }
}

}  // namespace tessera
