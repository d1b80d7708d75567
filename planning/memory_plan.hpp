// plan_memory: per-rank memory of a training step, predicted from the architecture by running the
// engine's schedule over shadow modules that allocate exactly what Tessera's modules and
// FlatParamUnits allocate (sim_engine.hpp). The result is the same table the engine's
// MemoryTracker fills — bytes per category, their peaks during a step, and the simultaneous peak —
// so a prediction and a measurement compare category by category.
//
// What is counted, per rank (P: a unit's elements padded to a multiple of the shard group N):
//   parameters       stored parameters: P (stages 0-2) or P/N (stage 3) in the param dtype
//   gradients        f32: P (stages 0-1); P/N (stages 2-3) plus the full P of each unit while its
//                    backward runs and its reduction is in flight (≤ 2), and the tied embedding's
//                    through the whole backward
//   optimizer state  Adam m, v (f32) over P (stage 0) or P/N, plus an f32 master when params are not f32
//   activations      what every module keeps from forward for backward under the checkpointing
//                    policy, the gradients flowing back, the logits/dlogits (B,T,V) f32
//   comm buffers     stage 3's gathered units (running, prefetched, the tied embedding), f32 compute
//                    copies of non-f32 parameters, reduce-dtype staging of gradient collectives
//   workspace        the step's micro-batches (inputs and targets (B,T) i32), kernel scratch
//                    (attention backward (B,NH,T,T)), cross-entropy losses
// The steady-state step is the second one: the first records the unit order that prefetching uses.
//
// Offload (not in the engine yet) is modelled: offloaded optimizer state or parameter shards are
// counted in `offloaded`, not on the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planning/plan_config.hpp"
#include "runtime/memory_profiler.hpp"

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
  // Device bytes before the step (.current): model state and the step's micro-batches.
  MemorySnapshot before_step;
  // During a steady-state step: per-category peaks (.peak), the simultaneous peak (.peak_total),
  // and the bytes left after it (.current).
  MemorySnapshot step;
  // Bytes offloaded off the device, by category (parameters, optimizer state).
  MemorySnapshot offloaded;
  // The predicted phases of the step, as MemoryProfiler samples them in the engine.
  std::vector<MemorySample> timeline;

  std::int64_t peak(MemoryCategory c) const { return step.peak_of(c); }
  std::int64_t peak_total() const { return step.peak_total; }
  bool judged() const { return config.device_memory > 0; }  // a device size was given
  std::int64_t budget() const { return config.device_memory - config.reserved; }
  bool fits() const { return !judged() || peak_total() <= budget(); }
};

// Throws std::invalid_argument (PlanConfig::validate) on an inconsistent configuration.
MemoryPlan plan_memory(const PlanConfig& config);

}  // namespace tessera
