// AdamWState: AdamW's per-element state for one optimizer range — exp_avg (m) and exp_avg_sq (v),
// f32 — and its update through the device's adamw_update kernel, one parameter segment at a time
// (weight decay only on segments whose parameter decays).
#pragma once

#include "runtime/optim/optimizer_state.hpp"

namespace tessera {

class AdamWState final : public OptimizerState {
 public:
  AdamWState(const AdamWConfig& config, Device& device, std::int64_t count, MemoryKind memory);

  void step(const Kernels& kernels, Tensor& master, const Tensor& grads, std::span<const ParamSegment> segments,
            float lr, std::int64_t step) override;
  std::vector<StateTensor> state() const override;
  void reset() override;

  static std::vector<StateSpec> specs();

 private:
  AdamWConfig config_;
  Tensor exp_avg_;     // (count) f32
  Tensor exp_avg_sq_;  // (count) f32
};

}  // namespace tessera
