// measure_engine_step: runs the real ShardedEngine (on the device MeasureOptions names: by default
// a usable GPU, else the CPU) for the configuration a MemoryPlan was made for and reads its
// MemoryTracker — the measurement a plan is checked against.
// Builds the GPT (or the custom model), applies the checkpointing policy before the engine wraps
// units (as train_gpt does), runs one warm-up step on a one-token batch (a custom model: one sample;
// it records the unit order prefetching follows), resets the peaks and runs the measured step over
// `accumulation` micro-batches of random values (ids below each tensor's id bound) with the model's
// step function. Collective: every rank of `world` must call it with the same config.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/comm/communicator.hpp"
#include "tessera/planning/plan_config.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/memory_profiler.hpp"

namespace tessera {

struct MeasuredStep {
  MemorySnapshot before_step;          // .current: bytes before the measured step
  MemorySnapshot step;                 // .peak / .peak_total during it, .current after it
  std::vector<MemorySample> timeline;  // the measured step's phases, when profiled
  MemorySnapshot host, nvme;           // the pinned-host and NVMe tiers after the step
};

struct MeasureOptions {
  std::uint64_t seed = 1;
  // Also sample the step with a MemoryProfiler through the engine's phase observer. The peaks in
  // `step` then come from the profiler (the same values; the tracker's own peaks are per phase).
  bool profile = false;
  DeviceChoice device = DeviceChoice::kAuto;  // the device the engine runs on (make_device)
};

// Throws std::invalid_argument for what the engine cannot run: a parameter count alone, or
// gradients not accumulated in f32, a custom model's i32 batch tensor without an id bound;
// SettingError("offload.path") for NVMe offload without a directory for its files.
MeasuredStep measure_engine_step(const PlanConfig& config, Communicator& world, const MeasureOptions& options = {});

}  // namespace tessera
