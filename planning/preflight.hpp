// Pre-flight memory check: before a run allocates anything, this rank's predicted peak (the
// planner: the real engine on the meta device) against what its device can still give
// (Device::memory_budget: on the CPU, process limits and MemAvailable or the cgroup's remaining
// memory, shared by the node's ranks). A run that will not fit stops here with the prediction by
// category and the advisor's suggestion, instead of growing until the machine runs out.
//
// The prediction counts tracked bytes; `margin` (5% + 128 MiB by default) leaves room for what the
// tracker does not see (allocator rounding, BLAS and MPI buffers, the program itself).
//
// The node's shared memory is split among the ranks on the node: the overload taking the world
// communicator counts them (ranks_on_node); the other one takes PreflightOptions::sharers, which
// must be given for a plan of more than one rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/comm/communicator.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/recommend.hpp"
#include "tessera/runtime/memory_budget.hpp"

namespace tessera {

struct PreflightOptions {
  // Processes sharing the device's shared memory (the ranks on this node, ranks_on_node). 0: not given
  // — counted from the communicator by the overload taking it; for the other, 1 for a one-rank plan
  // and an error for more ranks (the node's memory would be counted once per rank).
  int sharers = 0;
  bool host_memory = true;                          // the device's memory is host memory: both tiers come out of it
  OffloadTarget offload_to = OffloadTarget::kNvme;  // where the advisor may offload (RecommendRequest)
  double margin_fraction = 0.05;
  std::int64_t margin_bytes = std::int64_t{128} << 20;
};

struct PreflightCheck {
  bool fits = true;
  std::int64_t predicted = 0;   // tracked peak: device tier (+ host tier on host memory)
  std::int64_t needed = 0;      // predicted plus the margin
  std::int64_t available = -1;  // -1: unknown, and the check passes
  std::string available_source;
  MemoryPlan plan;
  // When it does not fit: what the advisor found for the memory available (keeping the global
  // batch), or why it could not help.
  std::optional<Recommendation> recommendation;
  std::string advisor_error;

  // "predicted peak 1.2 GB per rank (1.4 GB with room for untracked memory)" and "30 GB available
  // (MemAvailable 28 GiB)": summary() joins them, train_gpt wraps them (core/wrapped_line.hpp).
  std::string predicted_text() const;
  std::string available_text() const;
  std::string summary() const;  // one line: predicted_text(), available_text()
  std::string report() const;   // when it does not fit: summary, the plan's table, the advisor's walk
};

// Not collective: every rank computes its own check (the plans are the same on every rank). Throws
// std::invalid_argument when options.sharers is not given and the plan has more than one rank.
PreflightCheck preflight_memory_check(const PlanConfig& config, const MemoryBudget& budget,
                                      const PreflightOptions& options = {});

// The same with options.sharers counted over `world` (ranks_on_node). Collective: every rank of
// `world` calls it together. Throws std::invalid_argument when config.ranks is not world's size.
PreflightCheck preflight_memory_check(const PlanConfig& config, const MemoryBudget& budget, Communicator& world,
                                      PreflightOptions options = {});

}  // namespace tessera
