// EtaEstimator: the time a run still needs, from the step times it measured: the mean of the last
// `window` steps (a sliding window follows a run whose steps speed up after warm-up, or slow down
// when the machine gets busy) times the steps left.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace tessera {

class EtaEstimator {
 public:
  // total_steps: the step the run ends at; window: steps the mean is taken over (>= 1).
  explicit EtaEstimator(std::int64_t total_steps, int window = 20);

  // After a step: `steps_done` steps are complete (it may go back, after a reload) and the step
  // took `seconds`.
  void record(std::int64_t steps_done, double seconds);

  // Mean seconds per step over the window; nullopt before the first step.
  std::optional<double> seconds_per_step() const;
  // Seconds until total_steps; nullopt before the first step.
  std::optional<double> seconds_left() const;

 private:
  std::int64_t total_steps_;
  std::size_t window_;
  std::int64_t steps_done_ = 0;
  std::deque<double> recent_;
  double recent_sum_ = 0.0;
};

}  // namespace tessera
