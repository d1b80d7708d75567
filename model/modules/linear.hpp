// Linear: y = x W^T + b over the last dimension. x (..., in) -> y (..., out), both in the dtype of the
// weight (the compute dtype: f32 or bf16).
// forward_gelu / backward_gelu run the layer with a GELU after it as one kernel each
// (linear_gelu_forward / linear_gelu_backward): the MLP's fc, whose caller keeps the pre-activation.
#pragma once

#include "tessera/model/module.hpp"

namespace tessera {

class Linear final : public Module {
 public:
  // weight (out, in) ~ N(0, init_std^2), bias (out) zeros when `bias`.
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std = 0.02f);

  std::string type_name() const override { return "Linear"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  struct GeluOutput {
    Tensor pre;  // (..., out) x W^T + b
    Tensor out;  // (..., out) gelu(pre)
  };
  // The layer followed by GELU; keeps x (when ctx.training) as forward does. The same bits as
  // forward then the GELU kernel.
  GeluOutput forward_gelu(Context& ctx, const Tensor& x);
  // Backward of forward_gelu from dy (..., out), the gradient of the GELU output — overwritten with
  // the gradient of pre — and the kept pre; returns dx and accumulates the parameter gradients.
  Tensor backward_gelu(Context& ctx, const Tensor& dy, const Tensor& pre);

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  std::int64_t in_, out_;
  Parameter& weight_;
  Parameter* bias_ = nullptr;
  Tensor input_;  // (..., in) kept for backward
};

}  // namespace tessera
