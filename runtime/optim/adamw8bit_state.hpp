// AdamW8bitState: 8-bit AdamW's state for one optimizer range (Dettmers et al. 2021, block-wise
// dynamic quantization): m as i8 codes of the signed dynamic map and v as u8 codes of the unsigned
// one, each with an f32 absolute maximum per block of `block` elements — 2 bytes per element plus
// 8 per block instead of AdamW's 8. The master weights stay f32 (the engine's). One kernel call
// per step dequantizes, updates and requantizes block by block (Kernels::adamw8bit_update).
//
// The range must be a whole number of blocks (the engine pads shards to the optimizer's
// alignment), so blocks never straddle ranks and sit at the same flat positions at any rank count.
#pragma once

#include "runtime/optim/optimizer_state.hpp"

namespace tessera {

class AdamW8bitState final : public OptimizerState {
 public:
  AdamW8bitState(const AdamWConfig& config, std::int64_t block, Device& device, std::int64_t count, MemoryKind memory);

  void step(const Kernels& kernels, Tensor& master, const Tensor& grads, std::span<const ParamSegment> segments,
            float lr, std::int64_t step) override;
  std::vector<StateTensor> state() const override;
  void reset() override;

  // exp_avg_q (i8), exp_avg_absmax (f32, one per block), exp_avg_sq_q (u8), exp_avg_sq_absmax.
  static std::vector<StateSpec> specs(std::int64_t block);

 private:
  AdamWConfig config_;
  std::int64_t block_;
  Tensor m_codes_;   // (count) i8
  Tensor m_absmax_;  // (count / block) f32
  Tensor v_codes_;   // (count) u8
  Tensor v_absmax_;  // (count / block) f32
};

}  // namespace tessera
