// StepHealth: what a step says about the health of the weights, judged by the spike guard's
// statistics: a RunningBand of the loss over the last `window` healthy steps, `z` spreads wide.
// It judges from the first step on, so a run diverging early is caught: until `warmup` healthy
// steps are in the band its spread is taken as at least 10% of the mean (a loss 60% above the
// recent mean at z = 6), after that as at least 1%, as the guard's.
//
// A step's loss is the loss of the weights going into it, so one step tells two things:
//  * state_before_healthy: the weights before the step (what a save made right before it holds)
//    were healthy — false when the loss is not finite or stands above the band;
//  * state_after_healthy: the weights after the step may be kept as healthy — its loss and
//    gradient norm are finite, the loss is inside the band and the update was taken. A step the
//    spike guard skipped left the weights as they were and says what they were.
// Healthy steps that were taken enter the band; others do not.
#pragma once

#include <string>

#include "tessera/training/running_band.hpp"
#include "tessera/training/spike_detector.hpp"
#include "tessera/training/step_result.hpp"

namespace tessera {

struct StepHealthVerdict {
  bool state_before_healthy = true;
  bool state_after_healthy = true;
  std::string reason;  // why not: "the loss 1.46e+13 is 9.1e+11 spreads above the mean 9.2 of ..."
};

class StepHealth {
 public:
  explicit StepHealth(const SpikeConfig& band);

  StepHealthVerdict judge(const StepResult& step);

 private:
  SpikeConfig config_;
  RunningBand losses_;
  bool last_state_healthy_ = true;  // of the weights after the last judged step
};

}  // namespace tessera
