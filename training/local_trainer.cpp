// LocalTrainer: the single-process training step.
#include "tessera/training/local_trainer.hpp"

#include <cmath>
#include <stdexcept>

#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/optim/grad_clip.hpp"

namespace tessera {

LocalTrainer::LocalTrainer(Module& model, Device& device, const AdamWConfig& adamw, float grad_clip)
    : model_(model),
      device_(device),
      parameters_(model.parameters()),
      optimizer_(adamw, parameters_),
      grad_clip_(grad_clip) {
  allocate_gradients(model_, device_);
}

StepResult LocalTrainer::step(const std::vector<MicroBatch>& micro_batches, float lr) {
  if (micro_batches.empty()) throw std::invalid_argument("LocalTrainer::step: no micro-batches");
  zero_gradients(model_);
  Context ctx(device_);
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  double loss_sum = 0.0;
  for (const MicroBatch& mb : micro_batches) {
    CrossEntropyLoss loss;
    Tensor logits = model_.forward(ctx, mb.inputs);
    loss_sum += loss.forward(ctx, logits, mb.targets);
    logits = Tensor();
    model_.backward(ctx, loss.backward(ctx, scale));
  }
  StepResult result;
  result.loss = static_cast<float>(loss_sum / static_cast<double>(micro_batches.size()));
  result.grad_norm = std::sqrt(grad_sum_squares(device_, parameters_));
  if (!std::isfinite(result.grad_norm)) {
    result.skipped = true;
    return result;
  }
  // The clip is applied inside the update (no pass over the gradients).
  optimizer_.step(device_, lr, clip_coefficient(result.grad_norm, grad_clip_));
  return result;
}

float LocalTrainer::evaluate(const MicroBatch& batch) {
  Context ctx(device_);
  ctx.training = false;
  CrossEntropyLoss loss;
  Tensor logits = model_.forward(ctx, batch.inputs);
  return loss.forward(ctx, logits, batch.targets);
}

}  // namespace tessera
