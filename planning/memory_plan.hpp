// plan_memory: per-rank memory of a training step, predicted by running the real ShardedEngine
// and modules on a meta device — allocations tracked by category, no data, kernels that do
// nothing — with loopback communicators standing for rank 0 of the job's groups. What the planner
// counts is therefore what the engine allocates, by construction: the same MemoryTracker
// categories, their peaks during a step and the simultaneous peak, so a prediction and a
// measurement compare category by category (tests/planning check them to the byte).
//
// What is counted, per rank (P: a unit's elements padded to a multiple of the shard group N):
//   parameters       stored parameters: P (stages 0-2) or P/N (stage 3) in the param dtype
//   gradients        f32: P (stages 0-1); P/N (stages 2-3) plus the full P of each unit while its
//                    backward runs and its reduction is in flight, and the tied embedding's
//                    through the whole backward
//   optimizer state  the optimizer's state over P (stage 0) or P/N, plus an f32 master when the
//                    parameters are not f32 (or live in another memory than the optimizer)
//   activations      what every module keeps from forward for backward under the checkpointing
//                    policy, the gradients flowing back, the logits/dlogits (B,T,V) f32
//   comm buffers     stage 3's gathered units, f32 compute copies of non-f32 parameters,
//                    reduce-dtype staging of gradient collectives
//   workspace        the step's micro-batches (inputs and targets (B,T) i32), kernel scratch
//                    (attention backward's delta (B,NH,T)), cross-entropy losses, the gradient norm
// The steady-state step is the second one: the first records the unit order that prefetching uses.
//
// A model of your own (ModelSpec::custom, planning/custom_model.hpp) is planned the same way: its
// build function makes the model on the meta device, the engine wraps it under PlanConfig's unit
// policy, the planner holds the micro-batch tensors it describes (workspace) and runs its step
// function — so its activations, loss buffers, communication buffers and workspace are what its
// own modules and step allocate, as the MemoryTracker of a real run of them measures.
//
// Offload: state placed in pinned host memory (ShardingConfig::offload, cpu) is counted in `host`,
// state in the NVMe store in `nvme` (the store's staging ring is pinned host memory), not on the
// device. With PlanConfig::host_is_device the host tier counts against the device budget; otherwise
// (a GPU) the host tier must fit PlanConfig::host_memory when that is given, and the host updates the
// offloaded optimizer range through a pinned copy of the gradients, whose bytes also carry the
// updated parameters back (Placement). A model
// given only by its
// parameter count is one unit of model state; with 2-byte gradients (the ZeRO paper's what-if) its
// model state is arithmetic over the same Placement table (model_state_by_arithmetic).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/planning/plan_config.hpp"
#include "tessera/runtime/memory_profiler.hpp"

namespace tessera {

struct UnitPlan {
  std::string name;
  std::int64_t numel = 0, padded_numel = 0, shard_numel = 0;
};

struct MemoryPlan {
  PlanConfig config;
  std::int64_t parameter_count = 0;  // Ψ (unpadded)
  std::vector<UnitPlan> units;
  // False for a model given only by its parameter count: then only model state is known.
  bool has_step = false;
  // True when model state was computed by the ZeRO paper's arithmetic (2-byte gradients), not by
  // running the engine.
  bool model_state_by_arithmetic = false;
  // Device bytes before the step (.current): model state and the step's micro-batches.
  MemorySnapshot before_step;
  // During a steady-state step: per-category peaks (.peak), the simultaneous peak (.peak_total),
  // and the bytes left after it (.current).
  MemorySnapshot step;
  // Bytes placed off the device, by category: in pinned host memory (offloaded state, NVMe staging
  // buffers) and in NVMe offload files.
  MemorySnapshot host, nvme;
  // The predicted phases of the step, as MemoryProfiler samples them in the engine.
  std::vector<MemorySample> timeline;

  std::int64_t peak(MemoryCategory c) const { return step.peak_of(c); }
  std::int64_t peak_total() const { return step.peak_total; }
  // What must fit the device budget: the peak, plus the host tier when host memory is the device's.
  std::int64_t needed() const { return peak_total() + (config.host_is_device ? host.current_total : 0); }
  bool judged() const { return config.device_memory > 0; }  // a device size was given
  std::int64_t budget() const { return config.device_memory - config.reserved; }
  // A discrete device's offloaded state must also fit the host memory given (PlanConfig::host_memory).
  bool host_fits() const {
    return config.host_is_device || config.host_memory <= 0 || host.peak_total <= config.host_memory;
  }
  bool device_fits() const { return !judged() || needed() <= budget(); }
  bool fits() const { return device_fits() && host_fits(); }
};

// Throws SettingError / std::invalid_argument (PlanConfig::validate) on an inconsistent configuration;
// whatever a custom model's build or step function throws.
MemoryPlan plan_memory(const PlanConfig& config);

}  // namespace tessera
