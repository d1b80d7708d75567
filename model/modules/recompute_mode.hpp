// RecomputeMode: what a TransformerBlock (through its attention and MLP) keeps from forward for
// backward. Set by the "selective" activation-checkpointing policy (apply_recompute).
// ElementwiseRecomputable: the children that switch (CausalSelfAttention, Mlp).
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

enum class RecomputeMode {
  // Keep every intermediate backward reads (the default).
  kKeepAll,
  // Keep the matmul outputs (qkv, attention output, fc output), attention's log-sum-exp and the
  // LayerNorm statistics; backward recomputes the cheap element-wise results: both LayerNorm
  // outputs and the GELU output.
  kElementwise,
};

// A block's child that keeps less in kElementwise mode; its backward then needs the forward's
// input again, which the block passes to backward_with_input.
class ElementwiseRecomputable : public Module {
 public:
  // Backward given the forward input x (B,T,C) f32; required in kElementwise mode.
  virtual Tensor backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) = 0;

  void set_recompute(RecomputeMode mode) { recompute_ = mode; }
  RecomputeMode recompute() const { return recompute_; }

 protected:
  RecomputeMode recompute_ = RecomputeMode::kKeepAll;
};

}  // namespace tessera
