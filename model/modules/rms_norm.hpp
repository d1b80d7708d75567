// RmsNorm: root-mean-square normalisation over the last dimension with a learned scale (Llama).
// x (..., C) f32 -> y (..., C) = x / sqrt(mean(x^2) + eps) * weight. Parameter "weight" (C), ones.
// Kept for backward: the input and the (rows) f32 reciprocal RMS.
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class RmsNorm final : public Module {
 public:
  explicit RmsNorm(std::int64_t channels, float eps = 1e-5f);

  std::string type_name() const override { return "RMSNorm"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

 protected:
  void clear_own_saved() override;

 private:
  std::int64_t channels_;
  float eps_;
  Parameter& weight_;
  Tensor input_;  // (..., C)
  Tensor rstd_;   // (rows)
};

}  // namespace tessera
