// AdamW8bitRule: 8-bit AdamW (Dettmers et al. 2021, block-wise dynamic quantization) over a window
// of an optimizer range: m as i8 codes of the signed dynamic map and v as u8 codes of the unsigned
// one, each with an f32 absolute maximum per block of `block` elements — 2 bytes per element plus
// 8 per block instead of AdamW's 8. The master weights stay f32. One kernel call per window
// dequantizes, updates and requantizes block by block (Kernels::adamw8bit_update).
//
// Windows (and the whole range) are whole numbers of blocks: the engine pads shards to the
// optimizer's alignment, so blocks never straddle ranks and sit at the same flat positions at any
// rank count, and a streamed window is a multiple of the block.
#pragma once

#include "tessera/model/optim/optimizer_state.hpp"

namespace tessera {

class AdamW8bitRule final : public OptimizerRule {
 public:
  AdamW8bitRule(const AdamWConfig& config, std::int64_t block) : config_(config), block_(block) {}

  std::vector<StateSpec> specs() const override { return static_specs(block_); }
  void update(const Kernels& kernels, float* master, const float* grads, std::span<std::byte* const> state,
              std::int64_t count, std::span<const ParamSegment> segments, float lr, std::int64_t step,
              float grad_scale) const override;

  // exp_avg_q (i8), exp_avg_absmax (f32, one per block), exp_avg_sq_q (u8), exp_avg_sq_absmax.
  static std::vector<StateSpec> static_specs(std::int64_t block);

 private:
  AdamWConfig config_;
  std::int64_t block_;
};

}  // namespace tessera
