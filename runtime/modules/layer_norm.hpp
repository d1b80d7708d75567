// LayerNorm over the last dimension with learned scale and shift. x (..., C) f32 -> y (..., C) f32.
#pragma once

#include "runtime/module.hpp"

namespace tessera {

class LayerNorm final : public Module {
 public:
  explicit LayerNorm(std::int64_t channels, float eps = 1e-5f);

  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

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
