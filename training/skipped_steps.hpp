// SkippedSteps: counts the optimizer steps a run skipped (non-finite gradients, or spikes the
// SpikeDetector refused) and tells when a run has stopped making progress: `limit` skips in a row.
// Every rank sees the same StepResult (the loss is averaged over ranks, the norm is global), so every
// rank reaches the same verdict at the same step without communicating.
//
// It also rate-limits the line a program prints for a skip: the 1st, 2nd, 4th, 8th, ... skip of a
// streak, so a diverged run reports itself between log lines without flooding them.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/training/step_result.hpp"

namespace tessera {

class SkippedSteps {
 public:
  // limit: consecutive skips that end the run (0: never).
  explicit SkippedSteps(std::int64_t limit) : limit_(limit) {}

  // Records the result of one step.
  void record(const StepResult& result);

  std::int64_t total() const { return total_; }
  std::int64_t consecutive() const { return consecutive_; }
  std::int64_t limit() const { return limit_; }
  // The last `limit` steps were all skipped.
  bool exhausted() const { return limit_ > 0 && consecutive_ >= limit_; }
  // The step just recorded was skipped and is one to report (1st, 2nd, 4th, ... of a streak, or the last).
  bool report_now() const;
  // Forgets the current streak (after the run went back to a checkpoint); the total stays.
  void reset_streak() { consecutive_ = 0; }

 private:
  std::int64_t limit_;
  std::int64_t total_ = 0;
  std::int64_t consecutive_ = 0;
};

// "the gradients are not finite (norm nan)" or the detector's reason, for a skipped step's line.
std::string skip_reason(const StepResult& result, const std::string& spike_reason);

}  // namespace tessera
