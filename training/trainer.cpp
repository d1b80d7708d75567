// Trainer: forward, loss, backward over the micro-batches of one step, then the engine's step.
#include "tessera/training/trainer.hpp"

#include <cmath>
#include <stdexcept>

#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/staged_collectives.hpp"

namespace tessera {

StepResult Trainer::train_step(const std::vector<MicroBatch>& micro_batches, float lr) {
  if (micro_batches.empty()) throw std::invalid_argument("Trainer::train_step: no micro-batches");
  engine_.zero_grad();
  Context ctx(engine_.device());
  const float scale = engine_.loss_scale() / static_cast<float>(micro_batches.size());
  double loss_sum = 0.0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    CrossEntropyLoss loss;
    Tensor logits = engine_.forward(ctx, micro_batches[i].inputs);
    loss_sum += loss.forward(ctx, logits, micro_batches[i].targets);
    engine_.note_phase("loss");
    logits = Tensor();
    const GradSync sync = i + 1 == micro_batches.size() ? GradSync::kReduce : GradSync::kDefer;
    engine_.backward(ctx, loss.backward(ctx, scale), sync);
  }
  float mean_loss = static_cast<float>(loss_sum / static_cast<double>(micro_batches.size()));
  all_reduce_host(engine_.device(), engine_.world(), Span(&mean_loss, 1), DType::kF32, ReduceOp::kAvg);
  // A non-finite norm is the engine's to skip (and the loss scaler's to learn from).
  if (detector_ != nullptr && std::isfinite(engine_.gradient_norm()) &&
      detector_->is_spike(mean_loss, engine_.gradient_norm())) {
    return StepResult(mean_loss, engine_.skip_step(), /*is_spike=*/true);
  }
  return StepResult(mean_loss, engine_.step(lr));
}

float Trainer::evaluate(const MicroBatch& batch) {
  Context ctx(engine_.device());
  ctx.training = false;
  CrossEntropyLoss loss;
  Tensor logits = engine_.forward(ctx, batch.inputs);
  return loss.forward(ctx, logits, batch.targets);
}

}  // namespace tessera
