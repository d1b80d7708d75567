// Trainer: forward, loss, backward over the micro-batches of one step, then the engine's step.
#include "tessera/training/trainer.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/stream.hpp"
#include "tessera/sharding/staged_collectives.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"

namespace tessera {

Trainer::Trainer(ShardedEngine& engine, std::shared_ptr<Loss> loss)
    : engine_(engine), loss_(loss ? std::move(loss) : std::make_shared<TokenCrossEntropy>()) {}

StepResult Trainer::train_step(const std::vector<MicroBatch>& micro_batches, float lr) {
  if (micro_batches.empty()) throw std::invalid_argument("Trainer::train_step: no micro-batches");
  engine_.zero_grad();
  Context ctx(engine_.device());
  const float scale = engine_.loss_scale() / static_cast<float>(micro_batches.size());
  // The loss sums stay off the host's path until the micro-batches are done: one device double takes
  // each micro-batch's sum in turn and a copy queued behind it on the compute stream brings it to
  // pinned host memory; the host waits once, after the last backward.
  Device& device = engine_.device();
  const std::size_t count = micro_batches.size();
  auto device_sum = Storage::allocate(device, sizeof(double), MemoryCategory::kWorkspace);
  auto host_sums =
      Storage::allocate(device, count * sizeof(double), MemoryCategory::kWorkspace, MemoryKind::kPinnedHost);
  Stream& compute = device.stream(StreamRole::kCompute);
  std::vector<std::int64_t> positions(count);  // each micro-batch's count of loss terms
  for (std::size_t i = 0; i < count; ++i) {
    Tensor outputs = engine_.forward(ctx, micro_batches[i].inputs);
    positions[i] = loss_->forward_sum(ctx, outputs, micro_batches[i], static_cast<double*>(device_sum->data()));
    device.copy_to_host_async(static_cast<double*>(host_sums->data()) + i, device_sum->data(), sizeof(double), compute);
    engine_.note_phase("loss");
    outputs = Tensor();
    const GradSync sync = i + 1 == count ? GradSync::kReduce : GradSync::kDefer;
    engine_.backward(ctx, loss_->backward(ctx, scale), sync);
  }
  compute.synchronize();
  double loss_sum = 0.0;  // the micro-batches' mean losses, each rounded to float as forward() returns it
  for (std::size_t i = 0; i < count && device.holds_data(); ++i) {
    const double sum = static_cast<const double*>(host_sums->data())[i];
    loss_sum += static_cast<float>(sum / static_cast<double>(positions[i]));
  }
  device_sum.reset();  // both before the optimizer step, whose memory the planner measures
  host_sums.reset();
  float mean_loss = static_cast<float>(loss_sum / static_cast<double>(count));
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
  Tensor outputs = engine_.forward(ctx, batch.inputs);
  // One double back to the host (the meta device leaves it 0).
  double sum = 0.0;
  const auto device_sum = Storage::allocate(ctx.device, sizeof(double), MemoryCategory::kWorkspace);
  const std::int64_t count = loss_->forward_sum(ctx, outputs, batch, static_cast<double*>(device_sum->data()));
  ctx.device.copy_to_host(&sum, device_sum->data(), sizeof(double));
  return static_cast<float>(sum / static_cast<double>(count));
}

}  // namespace tessera
