// LayerNorm over the last dimension with learned scale and shift. x (..., C) f32 -> y (..., C) f32.
// forward_residual / backward_residual fuse the residual add in front of it (x = a + b) into the
// same kernel: what a pre-LN transformer block does between its two branches.
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class LayerNorm final : public Module {
 public:
  explicit LayerNorm(std::int64_t channels, float eps = 1e-5f);

  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  struct ResidualOutput {
    Tensor sum;  // (..., C) a + b, the residual stream (kept as the input, as forward keeps x)
    Tensor out;  // (..., C) layernorm(a + b)
  };
  // forward(a + b) with the add in the same kernel; a and b (..., C) f32 of one shape. The same
  // bits as an add followed by forward.
  ResidualOutput forward_residual(Context& ctx, const Tensor& a, const Tensor& b);
  // backward(dy) + dresidual (..., C) in one kernel: the input gradient with the gradient that
  // reaches the input along the residual path added. The same bits as backward followed by an add.
  Tensor backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual);

  // The output of the last training forward, recomputed from the kept input (selective
  // recomputation: the consumer did not keep it). Bit-identical to what forward returned; leaves
  // the kept state for backward in place.
  Tensor recompute_output(Context& ctx);

 protected:
  void clear_own_saved() override;

 private:
  std::int64_t channels_;
  float eps_;
  Parameter& weight_;
  Parameter& bias_;
  Tensor input_;  // (..., C)
  Tensor mean_;   // (rows)
  Tensor rstd_;   // (rows)
};

}  // namespace tessera
