// CausalSelfAttention: multi-head self-attention with a causal mask, GPT-2 layout.
// x (B,T,C) f32 -> qkv = x W_qkv^T (B,T,3C) -> per-head softmax(q k^T / sqrt(C/NH)) v -> proj -> (B,T,C).
// Children: "qkv" Linear(C, 3C), "proj" Linear(C, C) (its init std scaled for the residual path).
#pragma once

#include "runtime/module.hpp"

namespace tessera {

class CausalSelfAttention final : public Module {
 public:
  CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std);

  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

  std::int64_t heads() const { return heads_; }

 protected:
  void clear_own_saved() override;

 private:
  std::int64_t channels_, heads_;
  ModuleSlot& qkv_;
  ModuleSlot& proj_;
  Tensor qkv_out_;  // (B,T,3C)
  Tensor probs_;    // (B,NH,T,T)
};

}  // namespace tessera
