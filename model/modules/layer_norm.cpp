// LayerNorm forward/backward through the device's layernorm kernels, in the dtype of its input, with
// its weight and bias in that dtype or, under bf16 activations, in f32 (mean and rstd f32).
#include "tessera/model/modules/layer_norm.hpp"

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

LayerNorm::LayerNorm(std::int64_t channels, float eps, std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      eps_(eps),
      weight_(register_parameter("weight", {channels}, ParameterInit::ones(), false)),
      bias_(register_parameter("bias", {channels}, ParameterInit::zeros(), false)) {
  weight_.keep_f32 = bias_.keep_f32 = true;
}

void LayerNorm::clear_own_saved() {
  input_ = Tensor();
  mean_ = Tensor();
  rstd_ = Tensor();
}

DType LayerNorm::checked_dtype(const Tensor& x, const char* what) const {
  const DType param = require_value(weight_).dtype();
  const bool dtype_ok = x.dtype() == param || (x.dtype() == DType::kBF16 && param == DType::kF32);
  check_input(dtype_ok && x.ndim() >= 1 && x.dim(-1) == channels_, what,
              param == DType::kF32 ? "f32 or " + rows_of(DType::kBF16, channels_) : rows_of(param, channels_), x);
  return x.dtype();
}

Tensor LayerNorm::forward(Context& ctx, const Tensor& x) {
  const DType dtype = checked_dtype(x, "LayerNorm");
  const std::int64_t rows = x.numel() / channels_;
  Tensor y = new_activation(ctx, x.shape(), dtype);
  Tensor mean = new_statistics(ctx, {rows});
  Tensor rstd = new_statistics(ctx, {rows});
  with_norm_types(dtype, require_value(weight_).dtype(), "LayerNorm", [&]<typename T, typename W>() {
    ctx.device.kernels().layernorm_forward(y.data_as<T>(), mean.data_as<float>(), rstd.data_as<float>(), x.data_as<T>(),
                                           require_value(weight_).data_as<W>(), require_value(bias_).data_as<W>(), rows,
                                           channels_, eps_);
  });
  if (ctx.training) {
    input_ = x;
    mean_ = mean;
    rstd_ = rstd;
  }
  return y;
}

LayerNorm::ResidualOutput LayerNorm::forward_residual(Context& ctx, const Tensor& a, const Tensor& b) {
  const DType dtype = checked_dtype(a, "LayerNorm");
  check_input(b.dtype() == dtype && b.shape() == a.shape(), "LayerNorm (residual)",
              std::string(dtype_name(dtype)) + " " + shape_string(a.shape()) + " as the residual stream", b);
  const std::int64_t rows = a.numel() / channels_;
  ResidualOutput y{new_activation(ctx, a.shape(), dtype), new_activation(ctx, a.shape(), dtype)};
  Tensor mean = new_statistics(ctx, {rows});
  Tensor rstd = new_statistics(ctx, {rows});
  with_norm_types(dtype, require_value(weight_).dtype(), "LayerNorm", [&]<typename T, typename W>() {
    ctx.device.kernels().residual_layernorm_forward(
        y.sum.data_as<T>(), y.out.data_as<T>(), mean.data_as<float>(), rstd.data_as<float>(), a.data_as<T>(),
        b.data_as<T>(), require_value(weight_).data_as<W>(), require_value(bias_).data_as<W>(), rows, channels_, eps_);
  });
  if (ctx.training) {
    input_ = y.sum;
    mean_ = mean;
    rstd_ = rstd;
  }
  return y;
}

Tensor LayerNorm::recompute_output(Context& ctx) {
  check_input(input_.defined(), "LayerNorm::recompute_output", "a preceding training forward", input_);
  const DType dtype = input_.dtype();
  const std::int64_t rows = input_.numel() / channels_;
  Tensor y = new_activation(ctx, input_.shape(), dtype);
  // The same kernel on the same input as forward; mean and rstd come out equal to the kept ones.
  Tensor mean = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor rstd = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  with_norm_types(dtype, require_value(weight_).dtype(), "LayerNorm", [&]<typename T, typename W>() {
    ctx.device.kernels().layernorm_forward(y.data_as<T>(), mean.data_as<float>(), rstd.data_as<float>(),
                                           input_.data_as<T>(), require_value(weight_).data_as<W>(),
                                           require_value(bias_).data_as<W>(), rows, channels_, eps_);
  });
  return y;
}

Tensor LayerNorm::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "LayerNorm::backward", "a preceding training forward", dy);
  const DType dtype = input_.dtype();
  check_input(dy.dtype() == dtype && dy.shape() == input_.shape(), "LayerNorm::backward",
              std::string(dtype_name(dtype)) + " " + shape_string(input_.shape()), dy);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape(), dtype);
  ReplicatedGrads grads(ctx, tp_.get(), {&weight_, &bias_});
  with_norm_types(dtype, require_value(weight_).dtype(), "LayerNorm::backward", [&]<typename T, typename W>() {
    ctx.device.kernels().layernorm_backward(dx.data_as<T>(), grads.grad(0).data_as<W>(), grads.grad(1).data_as<W>(),
                                            dy.data_as<T>(), input_.data_as<T>(), require_value(weight_).data_as<W>(),
                                            mean_.data_as<float>(), rstd_.data_as<float>(), rows, channels_);
  });
  grads.finish();
  clear_own_saved();
  return dx;
}

Tensor LayerNorm::backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) {
  check_input(input_.defined(), "LayerNorm::backward", "a preceding training forward", dy);
  const DType dtype = input_.dtype();
  check_input(
      dresidual.dtype() == dtype && dresidual.shape() == input_.shape() && dy.dtype() == dtype, "LayerNorm::backward",
      std::string("the residual gradient ") + dtype_name(dtype) + " " + shape_string(input_.shape()), dresidual);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape(), dtype);
  ReplicatedGrads grads(ctx, tp_.get(), {&weight_, &bias_});
  with_norm_types(dtype, require_value(weight_).dtype(), "LayerNorm::backward", [&]<typename T, typename W>() {
    ctx.device.kernels().residual_layernorm_backward(
        dx.data_as<T>(), grads.grad(0).data_as<W>(), grads.grad(1).data_as<W>(), dy.data_as<T>(),
        dresidual.data_as<T>(), input_.data_as<T>(), require_value(weight_).data_as<W>(), mean_.data_as<float>(),
        rstd_.data_as<float>(), rows, channels_);
  });
  grads.finish();
  clear_own_saved();
  return dx;
}

}  // namespace tessera
