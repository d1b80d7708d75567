// Linear forward/backward through the device's linear kernels.
#include "tessera/model/modules/linear.hpp"

#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std)
    : in_(in_features),
      out_(out_features),
      weight_(register_parameter("weight", {out_features, in_features}, ParameterInit::normal(init_std), true)) {
  if (bias) bias_ = &register_parameter("bias", {out_features}, ParameterInit::zeros(), false);
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  check_input(x.dtype() == DType::kF32 && x.ndim() >= 1 && x.dim(-1) == in_, "Linear",
              "f32 (..., " + std::to_string(in_) + ")", x);
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  Tensor y = new_activation(ctx, out_shape);
  const std::int64_t rows = x.numel() / in_;
  ctx.device.kernels().linear_forward(y.data_as<float>(), x.data_as<float>(), require_value(weight_).data_as<float>(),
                                      bias_ ? require_value(*bias_).data_as<float>() : nullptr, rows, in_, out_);
  if (ctx.training) input_ = x;
  return y;
}

Linear::GeluOutput Linear::forward_gelu(Context& ctx, const Tensor& x) {
  check_input(x.dtype() == DType::kF32 && x.ndim() >= 1 && x.dim(-1) == in_, "Linear",
              "f32 (..., " + std::to_string(in_) + ")", x);
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  GeluOutput y{new_activation(ctx, out_shape), new_activation(ctx, out_shape)};
  const std::int64_t rows = x.numel() / in_;
  ctx.device.kernels().linear_gelu_forward(y.out.data_as<float>(), y.pre.data_as<float>(), x.data_as<float>(),
                                           require_value(weight_).data_as<float>(),
                                           bias_ ? require_value(*bias_).data_as<float>() : nullptr, rows, in_, out_);
  if (ctx.training) input_ = x;
  return y;
}

Tensor Linear::backward_gelu(Context& ctx, const Tensor& dy, const Tensor& pre) {
  check_input(input_.defined(), "Linear::backward", "a preceding training forward", dy);
  Tensor dx = linear_gelu_backward_with_input(ctx, *this, dy, pre, input_);
  input_ = Tensor();
  return dx;
}

Tensor Linear::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "Linear::backward", "a preceding training forward", dy);
  Tensor dx = new_activation(ctx, input_.shape());
  const std::int64_t rows = input_.numel() / in_;
  ctx.device.kernels().linear_backward(dx.data_as<float>(), require_grad(weight_).data_as<float>(),
                                       bias_ ? require_grad(*bias_).data_as<float>() : nullptr, dy.data_as<float>(),
                                       input_.data_as<float>(), require_value(weight_).data_as<float>(), rows, in_,
                                       out_);
  input_ = Tensor();
  return dx;
}

}  // namespace tessera
