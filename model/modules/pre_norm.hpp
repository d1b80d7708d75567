// PreNorm: what a pre-norm TransformerBlock asks of its two norms (LayerNorm for GPT-2, RmsNorm for
// Llama) beyond a Module's forward and backward: the residual add in front of the norm and its
// gradient taken with the norm's (in one kernel where the norm has one), and the norm's output
// recomputed from its kept input for selective recomputation.
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class PreNorm : public Module {
 public:
  struct ResidualOutput {
    Tensor sum;  // (..., C) a + b, the residual stream (kept as the input, as forward keeps x)
    Tensor out;  // (..., C) norm(a + b)
  };
  // forward(a + b); a and b (..., C) f32 of one shape. The same bits as an add followed by forward.
  virtual ResidualOutput forward_residual(Context& ctx, const Tensor& a, const Tensor& b) = 0;
  // backward(dy) + dresidual (..., C): the input gradient with the gradient that reaches the input
  // along the residual path added. The same bits as backward followed by an add.
  virtual Tensor backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) = 0;
  // The output of the last training forward, recomputed from the kept input (selective
  // recomputation: the consumer did not keep it). Bit-identical to what forward returned; leaves
  // the kept state for backward in place.
  virtual Tensor recompute_output(Context& ctx) = 0;
};

}  // namespace tessera
