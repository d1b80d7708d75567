// recommend: the memory-tuning walk people follow by hand, automated over plan_memory — and only
// towards what the engine runs. Starting from the configuration given:
//   1. bf16 parameters and bf16 gradient reduce, and on a GPU bf16 compute (master, optimizer
//      state and accumulation stay f32).
//   2. If micro 1 does not fit: a higher ZeRO stage, 1 then 2 (optimizer state, then gradients
//      sharded: no extra communication).
//   3. Then activation checkpointing of every block.
//   4. Then ZeRO-3 (parameters sharded, gathered per unit).
//   5. Then — only to a tier that relieves the device and that the engine runs on the target
//      (RecommendRequest::offload_to) — the optimizer state offloaded, then the parameter shard; and
//      last, on the CPU, bf16 compute (half the activations, at the cost of widening in its GEMMs).
//   6. When micro 1 fits but a target global batch needs accumulation, activation checkpointing is
//      taken if it lets the micro-batch grow (fewer accumulation steps).
//   7. Accumulation so that micro x ranks x accumulation hits the target global batch (the micro
//      batch is lowered to a divisor of the per-rank batch when needed).
// Every step comes with its reason and its predicted peak, in numbers; the result is a
// configuration (and its settings, which a program prints as a command line). When nothing fits,
// the result says why and what the floor is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/planning/memory_plan.hpp"
#include "tessera/training/batch_plan.hpp"

namespace tessera {

struct RecommendRequest {
  // Model, ranks, stage, hybrid group, seq_len, prefetch, optimizer, device memory (required) and
  // reserve are taken from here; precision, stage, micro-batch, accumulation, checkpointing and
  // offload are chosen.
  PlanConfig base;
  std::optional<std::int64_t> target_global_batch;  // sequences per optimizer step, all ranks
  std::int64_t max_micro_batch = 1024;              // largest micro-batch tried
  BatchNames batch_names;                           // how batch-plan messages name the values
  // Where the walk may offload: a tier that relieves the target's memory. For the CPU device (whose
  // memory is host memory) that is kNvme; for a GPU kCpu (the host updates the state, and
  // base.host_memory, when given, bounds it); kNone: no offload.
  OffloadTarget offload_to = OffloadTarget::kNone;
};

struct RecommendStep {
  std::string decision;   // "activation checkpointing: blocks"
  std::string reason;     // "micro 1 needs 92.1 GB with checkpointing none, 80.0 GB available"
  std::int64_t peak = 0;  // predicted simultaneous peak per rank after this step
};

struct Recommendation {
  bool fits = false;
  PlanConfig config;  // the chosen configuration (when fits), else the last one tried
  MemoryPlan plan;    // its plan
  std::optional<BatchPlan> batch;
  std::vector<RecommendStep> steps;
  std::string failure;  // why nothing fits (when !fits)

  std::string describe() const;  // the chosen config and each step with its reason and peak
};

// Throws SettingError / std::invalid_argument when base.device_memory is 0 or the configuration is
// invalid.
Recommendation recommend(const RecommendRequest& request);

}  // namespace tessera
