// Text output of the memory planner: the per-rank table tessera_plan prints, the phases of the
// predicted step, and the planned-vs-measured comparison bench_memory prints.
// Sizes print in powers of 10 (GB = 10^9 bytes, as GPU memory and the ZeRO paper count them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/planning/measured_step.hpp"
#include "tessera/planning/memory_plan.hpp"

namespace tessera {

std::string format_decimal_bytes(std::int64_t bytes);  // "28.00 GB", "512.00 MB", "96 B"

// The per-rank table: every category before and at its peak in the step, the simultaneous peak,
// the device budget and whether it fits, offloaded state, the ZeRO formula of the model state.
std::string format_plan(const MemoryPlan& plan);

// The rule of thumb Total = Model + Optimizer + max(Gradients + optimizer intermediates,
// Activations) computed from the plan's category peaks, beside the exact simultaneous peak, with
// why they differ (left-out categories, gradients and activations alive together).
std::string format_rule_of_thumb(const MemoryPlan& plan);

// Activations kept from forward to backward by unit, from the predicted timeline; consecutive
// units keeping the same bytes are grouped ("h.0 .. h.11: 37.75 MB each").
std::string format_activation_breakdown(const MemoryPlan& plan);

// One line per predicted phase: bytes per category at its end and the simultaneous peak within it.
std::string format_timeline(const std::vector<MemorySample>& timeline);

struct PlanComparison {
  std::string label;  // "ZeRO-2"
  MemoryPlan plan;
  MeasuredStep measured;
};

// The largest |planned - measured| over the category peaks, the simultaneous peak and the bytes
// before the step.
std::int64_t largest_difference(const MemoryPlan& plan, const MeasuredStep& measured);

// Rows (configuration, category): planned and measured peak in MiB and bytes, and their difference.
std::string format_comparison_table(const std::vector<PlanComparison>& rows);

}  // namespace tessera
