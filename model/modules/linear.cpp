// Linear forward/backward through the device's linear kernels, in the dtype of its weight.
#include "tessera/model/modules/linear.hpp"

#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

namespace {

std::int64_t sum_of(const std::vector<std::int64_t>& segments) {
  std::int64_t total = 0;
  for (std::int64_t s : segments) total += s;
  return total;
}

}  // namespace

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std)
    : Linear(in_features, {out_features}, bias, init_std, Split::kNone, nullptr) {}

Linear::Linear(std::int64_t in_features, const std::vector<std::int64_t>& out_segments, bool bias, float init_std,
               Split split, const TensorParallel* tp)
    : in_(split == Split::kRow ? in_features / tp->size() : in_features),
      out_(split == Split::kColumn ? local_extent(tp->split(0, out_segments)) : sum_of(out_segments)),
      weight_(register_parameter("weight", {sum_of(out_segments), in_features}, ParameterInit::normal(init_std), true,
                                 split == Split::kColumn ? tp->split(0, out_segments)
                                 : split == Split::kRow  ? tp->split(1, {in_features})
                                                         : TensorSlice{})),
      forward_bias_(split != Split::kRow || tp->rank() == 0) {
  if (bias) {
    bias_ = &register_parameter("bias", {sum_of(out_segments)}, ParameterInit::zeros(), false,
                                split == Split::kColumn ? tp->split(0, out_segments) : TensorSlice{});
  }
}

std::unique_ptr<Linear> Linear::column_parallel(std::int64_t in_features, std::vector<std::int64_t> out_segments,
                                                bool bias, float init_std, const TensorParallel& tp) {
  return std::unique_ptr<Linear>(new Linear(in_features, out_segments, bias, init_std, Split::kColumn, &tp));
}

std::unique_ptr<Linear> Linear::row_parallel(std::int64_t in_features, std::int64_t out_features, bool bias,
                                             float init_std, const TensorParallel& tp) {
  return std::unique_ptr<Linear>(new Linear(in_features, {out_features}, bias, init_std, Split::kRow, &tp));
}

template <typename T>
const T* Linear::forward_bias() const {
  return bias_ && forward_bias_ ? require_value(*bias_).data_as<T>() : nullptr;
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  const Tensor& w = require_value(weight_);
  check_input(x.dtype() == w.dtype() && x.ndim() >= 1 && x.dim(-1) == in_, "Linear", rows_of(w.dtype(), in_), x);
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  Tensor y = new_activation(ctx, out_shape, w.dtype());
  const std::int64_t rows = x.numel() / in_;
  with_element_type(w.dtype(), "Linear", [&]<typename T>() {
    ctx.device.kernels().linear_forward(y.data_as<T>(), x.data_as<T>(), w.data_as<T>(), forward_bias<T>(), rows, in_,
                                        out_);
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
                                             forward_bias<T>(), rows, in_, out_);
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
