// measure_engine_step: two ShardedEngine steps on random micro-batches, the second one measured.
#include "tessera/planning/measured_step.hpp"

#include <stdexcept>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"

namespace tessera {
namespace {

// One micro-batch of `micro` samples of `specs` on `device`, drawn from one generator in the order
// of the specs: i32 ids below each tensor's id bound, floating values uniform in [-1, 1).
MicroBatch random_batch(Device& device, const std::vector<BatchTensorSpec>& specs, std::int64_t micro,
                        std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> tensors;
  for (const BatchTensorSpec& spec : specs) {
    const Shape shape = spec.micro_batch_shape(micro);
    const auto n = static_cast<std::size_t>(shape_numel(shape));
    if (spec.dtype == DType::kI32) {
      std::vector<std::int32_t> ids(n);
      for (auto& x : ids) x = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(spec.id_bound)));
      tensors.push_back(Tensor::from_host_i32(device, ids, shape, MemoryCategory::kWorkspace));
    } else {
      std::vector<float> values(n);
      for (auto& x : values) x = 2.0f * rng.uniform() - 1.0f;
      tensors.push_back(Tensor::from_host(device, values, shape, spec.dtype, MemoryCategory::kWorkspace));
    }
  }
  return micro_batch_of(specs, std::move(tensors));
}

}  // namespace

MeasuredStep measure_engine_step(const PlanConfig& config, Communicator& world, const MeasureOptions& options) {
  config.validate();
  if (!config.model.plans_step()) {
    throw std::invalid_argument("measuring needs an architecture or a model of your own, not only a parameter count");
  }
  if (config.offload.uses_nvme() && config.offload.nvme.path.empty()) {
    throw SettingError("offload.path", "", "measuring NVMe offload needs a directory for the offload files");
  }
  if (config.grad_dtype != DType::kF32) {
    throw std::invalid_argument("the engine accumulates gradients in f32: measure with --grad-dtype f32");
  }
  if (config.ranks * config.tp != world.size()) {
    throw std::invalid_argument("the plan is for " + std::to_string(config.ranks * config.tp) + " ranks but " +
                                std::to_string(world.size()) + " are running: set the ranks to the job size");
  }
  const std::vector<BatchTensorSpec> specs = config.batch_tensors();
  for (const BatchTensorSpec& spec : specs) {
    if (spec.dtype == DType::kI32 && spec.id_bound < 1) {
      throw std::invalid_argument("batch tensor '" + spec.name +
                                  "' holds i32 ids without an id bound: set BatchTensorSpec::id_bound (the "
                                  "vocabulary or class count) so the measurement draws valid ids");
    }
  }
  auto device = make_device(options.device);
  // The engine's collectives run on the device's memory: NCCL for a GPU, `world` itself for the CPU.
  const std::unique_ptr<Communicator> device_world = make_device_world(*device, world, CommOptions{});
  Communicator& job_world = device_world ? *device_world : world;
  // Tensor parallel: the model split over this rank's group, the engine over its data-parallel group.
  TensorParallelMesh mesh;
  std::shared_ptr<TensorParallel> tensor_parallel;
  if (config.tp_split()) {
    mesh = make_tensor_parallel_mesh(job_world, config.tp, {});
    tensor_parallel = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*mesh.tensor),
                                                       config.sequence_parallel);
  }
  Communicator& engine_world = mesh.data ? *mesh.data : job_world;
  std::unique_ptr<Module> model = config.build_model(tensor_parallel);  // checkpointed before the engine wraps units
  ShardedEngine engine(*model, *device, engine_world, config.sharding_config(), options.seed, mesh.tensor.get());
  const PlanStepFunction train_step = config.step_function(tensor_parallel);

  std::vector<MicroBatch> batches;
  for (std::int64_t a = 0; a < config.accumulation; ++a) {
    // The ranks of a tensor-parallel group train on the same samples.
    const auto seed = options.seed * 1000003u + static_cast<std::uint64_t>(engine_world.rank()) * 131u +
                      static_cast<std::uint64_t>(a);
    batches.push_back(random_batch(*device, specs, config.micro_batch, seed));
  }
  const float lr = 1e-4f;
  // Warm-up: the engine records the unit order its prefetching follows. One sample is enough for
  // that and keeps the warm-up cheap (for the GPT, one token; under tensor parallelism one per rank
  // of the group, so sequence parallelism splits them).
  const std::vector<BatchTensorSpec> warm_up =
      config.model.gpt ? token_batch(config.tp, config.model.gpt->vocab_size) : specs;
  train_step(engine, {random_batch(*device, warm_up, 1, options.seed)}, lr);

  MeasuredStep result;
  MemoryTracker& memory = device->memory();
  memory.reset_peaks();
  result.before_step = memory.snapshot();
  if (options.profile) {
    MemoryProfiler profiler(memory);
    engine.set_phase_observer([&profiler](const std::string& phase) { profiler.on_phase(phase); });
    profiler.begin_step(1);
    train_step(engine, batches, lr);
    engine.set_phase_observer({});
    result.step = profiler.step_peaks(1);
    result.timeline = profiler.samples_of(1);
  } else {
    train_step(engine, batches, lr);
    result.step = memory.snapshot();
  }
  result.host = device->memory(MemoryKind::kPinnedHost).snapshot();
  result.nvme = device->memory(MemoryKind::kNvme).snapshot();
  return result;
}

}  // namespace tessera
