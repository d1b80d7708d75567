// The planner's SVG: one stacked bar per plan (e.g. ZeRO stages 0-3 and a recommended
// configuration) of the per-rank bytes by category, readable in a browser without other tools.
// A bar stacks each category's peak during the step (model state, then activations, comm buffers
// and workspace); a black tick marks the simultaneous peak (at most the stack: categories peak at
// different moments) and a red line the device memory available.
#pragma once

#include <string>
#include <vector>

#include "tessera/planning/memory_plan.hpp"

namespace tessera {

struct PlanBar {
  std::string label;  // under the bar: "ZeRO-0", "chosen"
  MemoryPlan plan;
};

std::string plan_bar_chart_svg(const std::vector<PlanBar>& bars, const std::string& title);
// Writes it to `path`; throws std::runtime_error naming the path when it cannot.
void write_plan_bar_chart_svg(const std::string& path, const std::vector<PlanBar>& bars, const std::string& title);

}  // namespace tessera
