// measure_engine_step: two ShardedEngine steps on random tokens, the second one measured.
#include "tessera/planning/measured_step.hpp"

#include <stdexcept>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

MicroBatch random_tokens(Device& device, std::int64_t vocab, std::int64_t b, std::int64_t t, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(b * t)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(vocab)));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(vocab)));
  return {Tensor::from_host_i32(device, in, {b, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {b, t}, MemoryCategory::kWorkspace)};
}

}  // namespace

MeasuredStep measure_engine_step(const PlanConfig& config, Communicator& world, const MeasureOptions& options) {
  config.validate();
  if (!config.model.gpt) throw std::invalid_argument("measuring needs an architecture, not only a parameter count");
  if (config.offload.uses_nvme() && config.offload.nvme.path.empty()) {
    throw SettingError("offload.path", "", "measuring NVMe offload needs a directory for the offload files");
  }
  if (config.grad_dtype != DType::kF32) {
    throw std::invalid_argument("the engine accumulates gradients in f32: measure with --grad-dtype f32");
  }
  if (config.ranks != world.size()) {
    throw std::invalid_argument("the plan is for " + std::to_string(config.ranks) + " ranks but " +
                                std::to_string(world.size()) + " are running: set the ranks to the job size");
  }
  auto device = make_device(options.device);
  // The engine's collectives run on the device's memory: NCCL for a GPU, `world` itself for the CPU.
  const std::unique_ptr<Communicator> device_world = make_device_world(*device, world, CommOptions{});
  Communicator& engine_world = device_world ? *device_world : world;
  Gpt model(*config.model.gpt);
  apply_recompute(model, config.recompute);
  ShardedEngine engine(model, *device, engine_world, config.sharding_config(), options.seed);
  Trainer trainer(engine);

  std::vector<MicroBatch> batches;
  for (std::int64_t a = 0; a < config.accumulation; ++a) {
    const auto seed =
        options.seed * 1000003u + static_cast<std::uint64_t>(world.rank()) * 131u + static_cast<std::uint64_t>(a);
    batches.push_back(
        random_tokens(*device, config.model.gpt->vocab_size, config.micro_batch, config.tokens_per_sample(), seed));
  }
  const float lr = 1e-4f;
  // Warm-up: the engine records the unit order its prefetching follows. One token is enough for that
  // and keeps the warm-up cheap.
  trainer.train_step({random_tokens(*device, config.model.gpt->vocab_size, 1, 1, options.seed)}, lr);

  MeasuredStep result;
  MemoryTracker& memory = device->memory();
  memory.reset_peaks();
  result.before_step = memory.snapshot();
  if (options.profile) {
    MemoryProfiler profiler(memory);
    engine.set_phase_observer([&profiler](const std::string& phase) { profiler.on_phase(phase); });
    profiler.begin_step(1);
    trainer.train_step(batches, lr);
    engine.set_phase_observer({});
    result.step = profiler.step_peaks(1);
    result.timeline = profiler.samples_of(1);
  } else {
    trainer.train_step(batches, lr);
    result.step = memory.snapshot();
  }
  result.host = device->memory(MemoryKind::kPinnedHost).snapshot();
  result.nvme = device->memory(MemoryKind::kNvme).snapshot();
  return result;
}

}  // namespace tessera
