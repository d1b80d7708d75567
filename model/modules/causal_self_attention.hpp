// CausalSelfAttention: multi-head self-attention with a causal mask, GPT-2 layout.
// x (B,T,C) f32 -> qkv = x W_qkv^T (B,T,3C) -> per-head softmax(q k^T / sqrt(C/NH)) v -> proj -> (B,T,C).
// Children: "qkv" Linear(C, 3C), "proj" Linear(C, C) (its init std scaled for the residual path).
// RecomputeMode::kElementwise keeps qkv and the attention output but not the softmax probabilities
// (recomputed from qkv in backward) nor the input x: backward_with_input takes x again from the caller.
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
  // dqkv (B,T,3C) from the gradient of the attention output and the softmax probabilities.
  Tensor attention_grad(Context& ctx, const Tensor& datt, const Tensor& probs);

  std::int64_t channels_, heads_;
  ModuleSlot& qkv_;
  ModuleSlot& proj_;
  Tensor qkv_out_;  // (B,T,3C)
  Tensor probs_;    // (B,NH,T,T)
};

}  // namespace tessera
