// SpikeDetector: tells a step whose loss or gradient norm stands out — more than `z` standard
// deviations above the mean of the last `window` accepted steps — so the Trainer can skip it on every
// rank before it updates anything (both values are the same on every rank: the loss is averaged over
// ranks, the norm is global). Spikes do not enter the window; until `warmup` steps were accepted,
// nothing is a spike. The spread used is at least 1% of the mean, so a flat curve does not make
// every wobble a spike.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/training/running_band.hpp"

namespace tessera {

struct SpikeConfig {
  int window = 100;
  int warmup = 20;
  double z = 6.0;

  // Throws SettingError ("spike.window", "spike.warmup", "spike.z") for values that cannot work.
  void validate() const;
};

class SpikeDetector {
 public:
  explicit SpikeDetector(const SpikeConfig& config);

  // True when (loss, norm) is a spike (a non-finite loss is one); otherwise records them.
  bool is_spike(double loss, double grad_norm);
  // Why the last spike was one: "loss 9.10 is 14.2 standard deviations above the mean 2.31 of the
  // last 100 steps".
  const std::string& last_reason() const { return last_reason_; }
  std::int64_t spikes() const { return spikes_; }

 private:
  SpikeConfig config_;
  RunningBand losses_, norms_;
  std::int64_t spikes_ = 0;
  std::string last_reason_;
};

}  // namespace tessera
