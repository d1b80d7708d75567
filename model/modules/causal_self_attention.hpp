// CausalSelfAttention: multi-head self-attention with a causal mask, GPT-2 layout.
// x (B,T,C) f32 -> qkv = x W_qkv^T (B,T,3C) -> per-head softmax(q k^T / sqrt(C/NH)) v -> proj -> (B,T,C).
// Children: "qkv" Linear(C, 3C), "proj" Linear(C, C) (its init std scaled for the residual path).
// Kept for backward: qkv, the attention output (the proj layer's input, the same tensor) and the
// (B,NH,T) log-sum-exp of each row of scores: the attention kernels are tiled and recompute the
// probabilities, so nothing (B,NH,T,T) is kept. RecomputeMode::kElementwise keeps the same but not
// the input x (the qkv layer's input): backward_with_input takes x again from the caller.
#pragma once

#include "tessera/model/module.hpp"
#include "tessera/model/modules/recompute_mode.hpp"

namespace tessera {

class CausalSelfAttention final : public ElementwiseRecomputable {
 public:
  CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std);

  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) override;

 protected:
  void clear_own_saved() override;

 private:
  // dqkv (B,T,3C) from the gradient of the attention output (B,T,C); drops what forward kept.
  Tensor attention_grad(Context& ctx, const Tensor& datt);

  std::int64_t channels_, heads_;
  ModuleSlot& qkv_;
  ModuleSlot& proj_;
  Tensor qkv_out_;  // (B,T,3C)
  Tensor att_;      // (B,T,C) the attention output
  Tensor lse_;      // (B,NH,T) f32 log-sum-exp of each row of scores
};

}  // namespace tessera
