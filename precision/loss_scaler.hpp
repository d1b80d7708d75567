// DynamicLossScaler: the fp16 loss scale (DeepSpeed / torch.amp style). The loss gradient is
// multiplied by scale() before backward so small f16 gradients do not flush to zero; the optimizer
// divides it back out. A step whose gradients hold inf/nan is skipped (every rank agrees, since the
// check uses the global gradient norm); after `hysteresis` consecutive overflows the scale backs
// off, and after `growth_interval` clean steps it grows.
#pragma once

#include <cstdint>

namespace tessera {

struct LossScalerConfig {
  float initial_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  std::int64_t growth_interval = 1000;  // clean steps before the scale grows
  int hysteresis = 2;                   // overflows tolerated before the scale backs off
  float min_scale = 1.0f;
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const LossScalerConfig& config = {});

  float scale() const { return scale_; }
  // Records the outcome of one step (found_inf: its gradients were not finite).
  void update(bool found_inf);

  // Checkpoint state.
  struct State {
    float scale;
    std::int64_t good_steps;
    int hysteresis_left;
  };
  State state() const { return {scale_, good_steps_, hysteresis_left_}; }
  void set_state(const State& s);

 private:
  LossScalerConfig config_;
  float scale_;
  std::int64_t good_steps_ = 0;
  int hysteresis_left_;
};

}  // namespace tessera
