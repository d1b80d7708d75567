// plan_memory: the real ShardedEngine on a meta device with loopback communicators, a warm-up
// step and one profiled step of the model's own step function.
#include "tessera/planning/memory_plan.hpp"

#include <algorithm>

#include "tessera/comm/loopback/loopback_communicator.hpp"
#include "tessera/planning/model_state.hpp"
#include "tessera/planning/parameter_count_model.hpp"
#include "tessera/runtime/meta/meta_device.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"

namespace tessera {
namespace {

// Rank 0's view of the job: a world of `ranks`, its shard group and (hybrid) its replica group.
struct LoopbackGroups {
  explicit LoopbackGroups(const PlanConfig& c)
      : world(0, c.ranks),
        shard(0, c.shard_ranks()),
        replicate(0, c.ranks / c.shard_ranks()),
        tensor(c.tp_rank, c.tp),
        tensor_parallel(c.tp_split() ? std::make_shared<TensorParallel>(
                                           std::make_shared<CommTensorParallelGroup>(tensor), c.sequence_parallel)
                                     : nullptr) {}
  ShardGroups groups() {
    ShardGroups g;
    g.shard = &shard;
    g.replicate = replicate.size() > 1 ? &replicate : nullptr;
    g.tensor = tensor.size() > 1 ? &tensor : nullptr;
    return g;
  }
  LoopbackCommunicator world, shard, replicate;
  LoopbackCommunicator tensor;  // the tensor-parallel group, seen from rank tp_rank
  std::shared_ptr<TensorParallel> tensor_parallel;
};

void record_units(MemoryPlan& plan, const ShardedEngine& engine) {
  for (const auto& u : engine.units()) {
    const FlatLayout& l = u->layout();
    plan.units.push_back({u->name(), l.numel(), l.padded_numel(), l.shard_numel()});
  }
}

// Model state of a parameter count with 2-byte gradients: the ZeRO paper's arithmetic (the engine
// accumulates in f32), placed by the same Placement table the engine uses.
MemoryPlan arithmetic_plan(MemoryPlan plan) {
  const PlanConfig& c = plan.config;
  const std::int64_t n = plan.parameter_count, shard = (n + c.shard_ranks() - 1) / c.shard_ranks();
  const Placement p = make_placement(c.stage, c.precision, c.offload, c.host_is_device);
  auto count = [&](Extent e) { return e == Extent::kFull ? n : shard; };
  MemoryTracker tiers[kMemoryKindCount];
  auto book = [&](MemoryKind kind, MemoryCategory category, std::int64_t bytes) {
    tiers[static_cast<std::size_t>(kind)].on_allocate(category, static_cast<std::size_t>(bytes));
  };
  book(p.params_memory, MemoryCategory::kParameters,
       static_cast<std::int64_t>(dtype_size(c.precision.param_dtype)) * count(p.stored_params));
  book(MemoryKind::kDevice, MemoryCategory::kGradients,
       static_cast<std::int64_t>(dtype_size(c.grad_dtype)) * count(p.grad_accumulator));
  book(p.optimizer_memory, MemoryCategory::kOptimizerState,
       optimizer_range_bytes(p, c.optimizer, count(p.optimizer_range)));
  // The pinned copy of the gradients the host updates from (the updated parameters go back through
  // the same bytes).
  if (p.update_on_host) book(MemoryKind::kPinnedHost, MemoryCategory::kGradients, 4 * count(p.optimizer_range));
  plan.units.push_back({"model", n, shard * c.shard_ranks(), shard});
  plan.model_state_by_arithmetic = true;
  plan.before_step = tiers[static_cast<std::size_t>(MemoryKind::kDevice)].snapshot();
  plan.step = plan.before_step;
  plan.host = tiers[static_cast<std::size_t>(MemoryKind::kPinnedHost)].snapshot();
  plan.nvme = tiers[static_cast<std::size_t>(MemoryKind::kNvme)].snapshot();
  return plan;
}

}  // namespace

MemoryPlan plan_memory(const PlanConfig& config) {
  config.validate();
  MemoryPlan plan;
  plan.config = config;
  plan.parameter_count = config.model.parameter_count();
  const bool step = config.model.plans_step();
  if (!step && config.grad_dtype != DType::kF32) return arithmetic_plan(std::move(plan));

  auto device = make_meta_device(config.attention_scratch, config.host_is_device);
  LoopbackGroups loopback(config);
  // The GPT or the custom model, checkpointed before the engine wraps the units.
  std::unique_ptr<Module> model =
      step ? config.build_model(loopback.tensor_parallel) : std::make_unique<ParameterCountModel>(plan.parameter_count);
  ShardedEngine engine(*model, *device, loopback.world, loopback.groups(), config.sharding_config(), 1);
  record_units(plan, engine);
  MemoryTracker& memory = device->memory();
  if (!step) {
    plan.before_step = memory.snapshot();
    plan.step = plan.before_step;
    plan.host = device->memory(MemoryKind::kPinnedHost).snapshot();
    plan.nvme = device->memory(MemoryKind::kNvme).snapshot();
    return plan;
  }

  // The step's micro-batches, held by the caller through the step (the GPT's: inputs and targets
  // (B,T) i32). Micro-steps between the first and the last allocate alike (gradients accumulate,
  // reductions wait or repeat), so two of them are run — one deferring, one reducing — while the
  // tensors of all `accumulation` micro-batches are held, as the caller holds them.
  const std::vector<BatchTensorSpec> specs = config.batch_tensors();
  const std::int64_t run = std::min<std::int64_t>(config.accumulation, 2);
  std::vector<MicroBatch> batches;
  for (std::int64_t a = 0; a < run; ++a) {
    std::vector<Tensor> tensors;
    for (const BatchTensorSpec& spec : specs) {
      tensors.push_back(
          Tensor::empty(*device, spec.micro_batch_shape(config.micro_batch), spec.dtype, MemoryCategory::kWorkspace));
    }
    batches.push_back(micro_batch_of(specs, std::move(tensors)));
  }
  std::vector<Tensor> others;  // each tensor of the micro-batches not run, for all of them at once
  if (config.accumulation > run) {
    for (const BatchTensorSpec& spec : specs) {
      Shape shape = spec.micro_batch_shape(config.micro_batch);
      shape.insert(shape.begin(), config.accumulation - run);
      others.push_back(Tensor::empty(*device, shape, spec.dtype, MemoryCategory::kWorkspace));
    }
  }
  const PlanStepFunction train_step = config.step_function(loopback.tensor_parallel);
  train_step(engine, batches, 1e-4f);  // records the unit order prefetching follows afterwards

  plan.before_step = memory.snapshot();
  MemoryProfiler profiler(memory);
  engine.set_phase_observer([&profiler](const std::string& phase) { profiler.on_phase(phase); });
  memory.reset_peaks();  // as a measurement does before the measured step
  profiler.begin_step(1);
  train_step(engine, batches, 1e-4f);
  plan.has_step = true;
  plan.step = profiler.step_peaks(1);
  plan.timeline = profiler.samples_of(1);
  plan.host = device->memory(MemoryKind::kPinnedHost).snapshot();
  plan.nvme = device->memory(MemoryKind::kNvme).snapshot();
  return plan;
}

}  // namespace tessera
