// plan_memory: builds the engine shadow, runs a warm-up step and one profiled step.
#include "planning/memory_plan.hpp"

#include "planning/sim_engine.hpp"

namespace tessera {
namespace {

SimUnitPlacement placement_of(const PlanOffload& offload) {
  return {offload.optimizer != OffloadTarget::kNone, offload.parameters != OffloadTarget::kNone};
}

void record_units(MemoryPlan& plan, const std::vector<std::unique_ptr<SimFlatUnit>>& units) {
  for (const auto& u : units) plan.units.push_back({u->name(), u->numel(), u->padded_numel(), u->shard_numel()});
}

}  // namespace

MemoryPlan plan_memory(const PlanConfig& config) {
  config.validate();
  MemoryPlan plan;
  plan.config = config;
  plan.parameter_count = config.model.parameter_count();
  MemoryTracker device, offloaded;

  if (!config.model.gpt) {
    // Model state only: the whole model as one unit, as the ZeRO paper counts it.
    std::vector<std::unique_ptr<SimFlatUnit>> unit;
    unit.push_back(std::make_unique<SimFlatUnit>("model", plan.parameter_count, config.stage, config.precision,
                                                 config.grad_dtype, config.shard_ranks(), device, offloaded,
                                                 placement_of(config.offload)));
    record_units(plan, unit);
    plan.before_step = device.snapshot();
    plan.step = plan.before_step;
    plan.offloaded = offloaded.snapshot();
    return plan;
  }

  SimEngineConfig ec;
  ec.model = *config.model.gpt;
  ec.checkpointing = config.checkpointing;
  ec.stage = config.stage;
  ec.precision = config.precision;
  ec.grad_dtype = config.grad_dtype;
  ec.shard_ranks = config.shard_ranks();
  ec.prefetch_units = config.prefetch_units;
  ec.reshard_after_forward = config.reshard_after_forward;
  ec.placement = placement_of(config.offload);
  SimEngine engine(ec, device, offloaded);
  record_units(plan, engine.units());

  // The step's micro-batches, built by the caller before the step: inputs and targets (B,T) i32.
  const Shape tokens{config.micro_batch, config.tokens_per_sample()};
  std::vector<SimTensor> inputs, targets;
  for (std::int64_t a = 0; a < config.accumulation; ++a) {
    inputs.push_back(SimTensor::allocate(device, tokens, DType::kI32, MemoryCategory::kWorkspace));
    targets.push_back(SimTensor::allocate(device, tokens, DType::kI32, MemoryCategory::kWorkspace));
  }
  plan.before_step = device.snapshot();
  engine.train_step(inputs, targets);  // records the unit order prefetching follows afterwards

  MemoryProfiler profiler(device);
  engine.set_phase_observer([&profiler](const std::string& phase) { profiler.on_phase(phase); });
  device.reset_peaks();  // as a measurement does before the measured step
  profiler.begin_step(1);
  engine.train_step(inputs, targets);
  plan.has_step = true;
  plan.step = profiler.step_peaks(1);
  plan.timeline = profiler.samples_of(1);
  plan.offloaded = offloaded.snapshot();
  return plan;
}

}  // namespace tessera
