// Validation loss: micro-batches dealt round-robin to ranks, their losses added in a fixed order.
#include "tessera/training/validation_loss.hpp"

#include <stdexcept>
#include <vector>

#include "tessera/core/setting_error.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/staged_collectives.hpp"

namespace tessera {
namespace {

// Windows [first, first + count) of `loader` as a micro-batch on `device`: inputs, targets (count,T) i32.
MicroBatch load_windows(Device& device, const SampleLoader& loader, std::int64_t first, std::int64_t count) {
  const std::int64_t t = loader.seq_len();
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(count * t)), targets(inputs.size());
  loader.batch(first, count, inputs.data(), targets.data());
  return {Tensor::from_host_i32(device, inputs, {count, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, targets, {count, t}, MemoryCategory::kWorkspace)};
}

}  // namespace

float validation_loss(Trainer& trainer, const SampleLoader& loader, const ValidationSet& set) {
  if (set.batches < 1) throw SettingError("eval.batches", std::to_string(set.batches), "must be >= 1");
  if (set.micro < 1) throw SettingError("eval.micro", std::to_string(set.micro), "must be >= 1");
  ShardedEngine& engine = trainer.engine();
  Communicator& world = engine.world();
  const std::int64_t ranks = world.size(), rank = world.rank();
  const bool collective_forward = engine.config().stage == ZeroStage::kStage3;
  std::vector<float> losses(static_cast<std::size_t>(set.batches), 0.0f);  // slot k: micro-batch k's mean
  const std::int64_t rounds = (set.batches + ranks - 1) / ranks;
  for (std::int64_t round = 0; round < rounds; ++round) {
    const std::int64_t k = round * ranks + rank;
    if (k < set.batches) {
      losses[static_cast<std::size_t>(k)] =
          trainer.evaluate(load_windows(engine.device(), loader, k * set.micro, set.micro));
    } else if (collective_forward) {
      trainer.evaluate(load_windows(engine.device(), loader, 0, set.micro));  // keeps the gathers in step
    }
  }
  all_reduce_host(engine.device(), world, Span(losses.data(), losses.size()), DType::kF32, ReduceOp::kSum);
  double sum = 0.0;
  for (const float loss : losses) sum += loss;
  return static_cast<float>(sum / static_cast<double>(set.batches));
}

}  // namespace tessera
