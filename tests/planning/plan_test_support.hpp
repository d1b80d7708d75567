// Shared pieces of the planner tests: plan configurations for the tiny and small GPT, and the
// comparison of a plan with what the engine's tracker measured, category by category (and phase by
// phase for a profiled step), with the expected (planned) and actual (measured) bytes, the
// configuration and the rank in every message.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/planning/measured_step.hpp"
#include "tessera/planning/memory_plan.hpp"

namespace tessera::testing {

inline PlanConfig plan_for(const std::string& preset, ZeroStage stage, int ranks, std::int64_t micro,
                           const std::string& checkpointing = "none") {
  PlanConfig c;
  c.model = model_preset(preset);
  c.stage = stage;
  c.ranks = ranks;
  c.micro_batch = micro;
  c.recompute = parse_recompute_policy(checkpointing);
  return c;
}

// "<the configuration>, rank R": where a check's message says it failed.
inline std::string where(const PlanConfig& c, int rank) { return c.describe() + ", rank " + std::to_string(rank); }

// |planned - measured| <= tolerance * max(planned, measured), both zero allowed.
inline bool within(std::int64_t planned, std::int64_t measured, double tolerance) {
  const double larger = static_cast<double>(std::max(planned, measured));
  return static_cast<double>(std::llabs(planned - measured)) <= tolerance * larger;
}

// EXPECTs every category's peak and the simultaneous peak of the measured step within `tolerance`
// of the plan, and the bytes before the step (model state + batch) likewise.
inline void expect_plan_matches(const MemoryPlan& plan, const MeasuredStep& measured, double tolerance,
                                const std::string& where) {
  for (MemoryCategory c : kAllMemoryCategories) {
    EXPECT_PRED3(within, plan.before_step.current_of(c), measured.before_step.current_of(c), tolerance)
        << where << ": " << memory_category_name(c) << " before the step: planned " << plan.before_step.current_of(c)
        << " bytes, measured " << measured.before_step.current_of(c);
    EXPECT_PRED3(within, plan.peak(c), measured.step.peak_of(c), tolerance)
        << where << ": peak " << memory_category_name(c) << ": planned " << plan.peak(c) << " bytes, measured "
        << measured.step.peak_of(c);
  }
  EXPECT_PRED3(within, plan.peak_total(), measured.step.peak_total, tolerance)
      << where << ": simultaneous peak: planned " << plan.peak_total() << " bytes, measured "
      << measured.step.peak_total;
}

// EXPECTs the plan to equal the measurement to the byte: every category's peak, the simultaneous
// peak, and the bytes before and after the step. On models this small a missing tensor is a few
// percent of a category, inside the 5% tolerance, so the tiny tests ask for exactness.
inline void expect_plan_exact(const MemoryPlan& plan, const MeasuredStep& measured, const std::string& where) {
  for (MemoryCategory c : kAllMemoryCategories) {
    EXPECT_EQ(plan.before_step.current_of(c), measured.before_step.current_of(c))
        << where << ": " << memory_category_name(c) << " before the step (planned vs measured bytes)";
    EXPECT_EQ(plan.peak(c), measured.step.peak_of(c))
        << where << ": peak " << memory_category_name(c) << " (planned vs measured bytes)";
    EXPECT_EQ(plan.step.current_of(c), measured.step.current_of(c))
        << where << ": " << memory_category_name(c) << " after the step (planned vs measured bytes)";
  }
  EXPECT_EQ(plan.peak_total(), measured.step.peak_total) << where << ": simultaneous peak (planned vs measured bytes)";
  for (MemoryCategory c : kAllMemoryCategories) {
    EXPECT_EQ(plan.host.current_of(c), measured.host.current_of(c))
        << where << ": pinned host " << memory_category_name(c) << " (planned vs measured bytes)";
    EXPECT_EQ(plan.nvme.current_of(c), measured.nvme.current_of(c))
        << where << ": NVMe " << memory_category_name(c) << " (planned vs measured bytes)";
  }
}

// EXPECTs the predicted timeline of a step to be the measured one: the same phases in the same order,
// and at each the bytes at its end and the peak inside it, per category.
inline void expect_same_timeline(const std::vector<MemorySample>& planned, const std::vector<MemorySample>& measured,
                                 const std::string& where) {
  ASSERT_EQ(planned.size(), measured.size()) << where << ": number of phases (planned vs measured)";
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const std::string at = where + ", phase #" + std::to_string(i) + " '" + measured[i].phase + "'";
    EXPECT_EQ(planned[i].phase, measured[i].phase) << at;
    for (MemoryCategory c : kAllMemoryCategories) {
      EXPECT_EQ(planned[i].memory.current_of(c), measured[i].memory.current_of(c))
          << at << ": " << memory_category_name(c) << " at the phase end (planned vs measured bytes)";
      EXPECT_EQ(planned[i].memory.peak_of(c), measured[i].memory.peak_of(c))
          << at << ": " << memory_category_name(c) << " peak inside the phase (planned vs measured bytes)";
    }
  }
}

}  // namespace tessera::testing
