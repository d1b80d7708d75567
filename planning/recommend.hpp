// recommend: the memory-tuning flow people follow by hand, automated over plan_memory.
//   1. bf16 parameters and bf16 gradient reduce (master, Adam state and accumulation stay f32);
//      the largest micro-batch that fits.
//   2. If not even micro 1 fits: activation checkpointing of every block ("blocks").
//   3. If still not: optimizer state offloaded to the CPU.
//   4. If still not: parameters sharded (ZeRO-3) if they were not, then offloaded to the CPU.
//   5. Accumulation so that micro x ranks x accumulation hits the target global batch (the micro
//      batch is lowered to a divisor of the per-rank batch when needed).
// Every decision comes with its reason, in numbers. When nothing fits, the result says why and what
// the floor is. Offload is modelled only (the engine has no offload yet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "training/batch_plan.hpp"
#include "planning/memory_plan.hpp"

namespace tessera {

struct RecommendRequest {
  // Model, ranks, stage, hybrid group, seq_len, prefetch, device memory (required) and reserve are
  // taken from here; precision, micro-batch, accumulation, checkpointing and offload are chosen.
  PlanConfig base;
  std::optional<std::int64_t> target_global_batch;  // sequences per optimizer step, all ranks
  std::int64_t max_micro_batch = 1024;               // largest micro-batch tried
  BatchNames batch_names;                            // how batch-plan messages name the values
};

struct RecommendStep {
  std::string decision;  // "activation checkpointing: blocks"
  std::string reason;    // "micro 1 needs 92.1 GB with checkpointing none, 80.0 GB available"
};

struct Recommendation {
  bool fits = false;
  PlanConfig config;  // the chosen configuration (when fits), else the last one tried
  MemoryPlan plan;    // its plan
  std::optional<BatchPlan> batch;
  std::vector<RecommendStep> steps;
  std::string failure;  // why nothing fits (when !fits)

  std::string describe() const;  // the chosen config and the reason for each step, one per line
};

// Throws std::invalid_argument when base.device_memory is 0 or the configuration is invalid.
Recommendation recommend(const RecommendRequest& request);

}  // namespace tessera
