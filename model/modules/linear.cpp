// Linear forward/backward through the device's linear kernels, in the dtype of its weight.
#include "tessera/model/modules/linear.hpp"

#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std)
    : in_(in_features),
      out_(out_features),
      weight_(register_parameter("weight", {out_features, in_features}, ParameterInit::normal(init_std), true)) {
  if (bias) bias_ = &register_parameter("bias", {out_features}, ParameterInit::zeros(), false);
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  const Tensor& w = require_value(weight_);
  check_input(x.dtype() == w.dtype() && x.ndim() >= 1 && x.dim(-1) == in_, "Linear", rows_of(w.dtype(), in_), x);
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  Tensor y = new_activation(ctx, out_shape, w.dtype());
  const std::int64_t rows = x.numel() / in_;
  with_element_type(w.dtype(), "Linear", [&]<typename T>() {
    ctx.device.kernels().linear_forward(y.data_as<T>(), x.data_as<T>(), w.data_as<T>(),
                                        bias_ ? require_value(*bias_).data_as<T>() : nullptr, rows, in_, out_);
  });
  if (ctx.training) input_ = x;
  return y;
}

Linear::GeluOutput Linear::forward_gelu(Context& ctx, const Tensor& x) {
  const Tensor& w = require_value(weight_);
  check_input(x.dtype() == w.dtype() && x.ndim() >= 1 && x.dim(-1) == in_, "Linear", rows_of(w.dtype(), in_), x);
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  GeluOutput y{new_activation(ctx, out_shape, w.dtype()), new_activation(ctx, out_shape, w.dtype())};
  const std::int64_t rows = x.numel() / in_;
  with_element_type(w.dtype(), "Linear", [&]<typename T>() {
    ctx.device.kernels().linear_gelu_forward(y.out.data_as<T>(), y.pre.data_as<T>(), x.data_as<T>(), w.data_as<T>(),
                                             bias_ ? require_value(*bias_).data_as<T>() : nullptr, rows, in_, out_);
  });
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
  Tensor dx = linear_backward_with_input(ctx, *this, dy, input_);
  input_ = Tensor();
  return dx;
}

}  // namespace tessera
