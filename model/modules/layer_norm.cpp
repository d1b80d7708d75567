// LayerNorm forward/backward through the device's layernorm kernels.
#include "tessera/model/modules/layer_norm.hpp"

#include "tessera/runtime/kernels.hpp"

namespace tessera {

LayerNorm::LayerNorm(std::int64_t channels, float eps)
    : channels_(channels),
      eps_(eps),
      weight_(register_parameter("weight", {channels}, ParameterInit::ones(), false)),
      bias_(register_parameter("bias", {channels}, ParameterInit::zeros(), false)) {}

void LayerNorm::clear_own_saved() {
  input_ = Tensor();
  mean_ = Tensor();
  rstd_ = Tensor();
}

Tensor LayerNorm::forward(Context& ctx, const Tensor& x) {
  check_input(x.dtype() == DType::kF32 && x.ndim() >= 1 && x.dim(-1) == channels_, "LayerNorm",
              "f32 (..., " + std::to_string(channels_) + ")", x);
  const std::int64_t rows = x.numel() / channels_;
  Tensor y = new_activation(ctx, x.shape());
  Tensor mean = new_activation(ctx, {rows});
  Tensor rstd = new_activation(ctx, {rows});
  ctx.device.kernels().layernorm_forward(y.data_as<float>(), mean.data_as<float>(), rstd.data_as<float>(),
                                         x.data_as<float>(), require_value(weight_).data_as<float>(),
                                         require_value(bias_).data_as<float>(), rows, channels_, eps_);
  if (ctx.training) {
    input_ = x;
    mean_ = mean;
    rstd_ = rstd;
  }
  return y;
}

LayerNorm::ResidualOutput LayerNorm::forward_residual(Context& ctx, const Tensor& a, const Tensor& b) {
  check_input(a.dtype() == DType::kF32 && a.ndim() >= 1 && a.dim(-1) == channels_, "LayerNorm",
              "f32 (..., " + std::to_string(channels_) + ")", a);
  check_input(b.dtype() == DType::kF32 && b.shape() == a.shape(), "LayerNorm (residual)",
              "f32 " + shape_string(a.shape()) + " as the residual stream", b);
  const std::int64_t rows = a.numel() / channels_;
  ResidualOutput y{new_activation(ctx, a.shape()), new_activation(ctx, a.shape())};
  Tensor mean = new_activation(ctx, {rows});
  Tensor rstd = new_activation(ctx, {rows});
  ctx.device.kernels().residual_layernorm_forward(y.sum.data_as<float>(), y.out.data_as<float>(), mean.data_as<float>(),
                                                  rstd.data_as<float>(), a.data_as<float>(), b.data_as<float>(),
                                                  require_value(weight_).data_as<float>(),
                                                  require_value(bias_).data_as<float>(), rows, channels_, eps_);
  if (ctx.training) {
    input_ = y.sum;
    mean_ = mean;
    rstd_ = rstd;
  }
  return y;
}

Tensor LayerNorm::recompute_output(Context& ctx) {
  check_input(input_.defined(), "LayerNorm::recompute_output", "a preceding training forward", input_);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor y = new_activation(ctx, input_.shape());
  // The same kernel on the same input as forward; mean and rstd come out equal to the kept ones.
  Tensor mean = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor rstd = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  ctx.device.kernels().layernorm_forward(y.data_as<float>(), mean.data_as<float>(), rstd.data_as<float>(),
                                         input_.data_as<float>(), require_value(weight_).data_as<float>(),
                                         require_value(bias_).data_as<float>(), rows, channels_, eps_);
  return y;
}

Tensor LayerNorm::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "LayerNorm::backward", "a preceding training forward", dy);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape());
  ctx.device.kernels().layernorm_backward(dx.data_as<float>(), require_grad(weight_).data_as<float>(),
                                          require_grad(bias_).data_as<float>(), dy.data_as<float>(),
                                          input_.data_as<float>(), require_value(weight_).data_as<float>(),
                                          mean_.data_as<float>(), rstd_.data_as<float>(), rows, channels_);
  clear_own_saved();
  return dx;
}

Tensor LayerNorm::backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) {
  check_input(input_.defined(), "LayerNorm::backward", "a preceding training forward", dy);
  check_input(dresidual.dtype() == DType::kF32 && dresidual.shape() == input_.shape(), "LayerNorm::backward",
              "the residual gradient f32 " + shape_string(input_.shape()), dresidual);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape());
  ctx.device.kernels().residual_layernorm_backward(
      dx.data_as<float>(), require_grad(weight_).data_as<float>(), require_grad(bias_).data_as<float>(),
      dy.data_as<float>(), dresidual.data_as<float>(), input_.data_as<float>(), require_value(weight_).data_as<float>(),
      mean_.data_as<float>(), rstd_.data_as<float>(), rows, channels_);
  clear_own_saved();
  return dx;
}

}  // namespace tessera
