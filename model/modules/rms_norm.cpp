// RmsNorm forward/backward through the device's rmsnorm kernels.
#include "tessera/model/modules/rms_norm.hpp"

#include "tessera/runtime/kernels.hpp"

namespace tessera {

RmsNorm::RmsNorm(std::int64_t channels, float eps)
    : channels_(channels), eps_(eps), weight_(register_parameter("weight", {channels}, ParameterInit::ones(), false)) {}

void RmsNorm::clear_own_saved() {
  input_ = Tensor();
  rstd_ = Tensor();
}

Tensor RmsNorm::forward(Context& ctx, const Tensor& x) {
  check_input(x.dtype() == DType::kF32 && x.ndim() >= 1 && x.dim(-1) == channels_, "RMSNorm",
              "f32 (..., " + std::to_string(channels_) + ")", x);
  const std::int64_t rows = x.numel() / channels_;
  Tensor y = new_activation(ctx, x.shape());
  Tensor rstd = new_activation(ctx, {rows});
  ctx.device.kernels().rmsnorm_forward(y.data_as<float>(), rstd.data_as<float>(), x.data_as<float>(),
                                       require_value(weight_).data_as<float>(), rows, channels_, eps_);
  if (ctx.training) {
    input_ = x;
    rstd_ = rstd;
  }
  return y;
}

Tensor RmsNorm::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "RMSNorm::backward", "a preceding training forward", dy);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape());
  ctx.device.kernels().rmsnorm_backward(
      dx.data_as<float>(), require_grad(weight_).data_as<float>(), dy.data_as<float>(), input_.data_as<float>(),
      require_value(weight_).data_as<float>(), rstd_.data_as<float>(), rows, channels_);
  clear_own_saved();
  return dx;
}

PreNorm::ResidualOutput RmsNorm::forward_residual(Context& ctx, const Tensor& a, const Tensor& b) {
  check_input(b.dtype() == DType::kF32 && b.shape() == a.shape(), "RMSNorm (residual)",
              "f32 " + shape_string(a.shape()) + " as the residual stream", b);
  Tensor sum = new_activation(ctx, a.shape());
  ctx.device.kernels().add(sum.data_as<float>(), a.data_as<float>(), b.data_as<float>(), a.numel());
  Tensor out = forward(ctx, sum);
  return {std::move(sum), std::move(out)};
}

Tensor RmsNorm::backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) {
  check_input(input_.defined() && dresidual.dtype() == DType::kF32 && dresidual.shape() == input_.shape(),
              "RMSNorm::backward", "the residual gradient f32 " + shape_string(input_.shape()), dresidual);
  Tensor dx = backward(ctx, dy);
  ctx.device.kernels().add(dx.data_as<float>(), dx.data_as<float>(), dresidual.data_as<float>(), dx.numel());
  return dx;
}

Tensor RmsNorm::recompute_output(Context& ctx) {
  check_input(input_.defined(), "RMSNorm::recompute_output", "a preceding training forward", input_);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor y = new_activation(ctx, input_.shape());
  // The same kernel on the same input as forward; rstd comes out equal to the kept one.
  Tensor rstd = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  ctx.device.kernels().rmsnorm_forward(y.data_as<float>(), rstd.data_as<float>(), input_.data_as<float>(),
                                       require_value(weight_).data_as<float>(), rows, channels_, eps_);
  return y;
}

}  // namespace tessera
