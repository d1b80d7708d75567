// RmsNorm forward/backward through the device's rmsnorm kernels, in the dtype of its input, with its
// weight in that dtype or, under bf16 activations, in f32 (rstd f32).
#include "tessera/model/modules/rms_norm.hpp"

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

RmsNorm::RmsNorm(std::int64_t channels, float eps, std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      eps_(eps),
      weight_(register_parameter("weight", {channels}, ParameterInit::ones(), false)) {
  weight_.keep_f32 = true;
}

void RmsNorm::clear_own_saved() {
  input_ = Tensor();
  rstd_ = Tensor();
}

Tensor RmsNorm::forward(Context& ctx, const Tensor& x) {
  const DType param = require_value(weight_).dtype();
  const DType dtype = x.dtype();
  const bool dtype_ok = dtype == param || (dtype == DType::kBF16 && param == DType::kF32);
  check_input(dtype_ok && x.ndim() >= 1 && x.dim(-1) == channels_, "RMSNorm",
              param == DType::kF32 ? "f32 or " + rows_of(DType::kBF16, channels_) : rows_of(param, channels_), x);
  const std::int64_t rows = x.numel() / channels_;
  Tensor y = new_activation(ctx, x.shape(), dtype);
  Tensor rstd = new_statistics(ctx, {rows});
  with_norm_types(dtype, param, "RMSNorm", [&]<typename T, typename W>() {
    ctx.device.kernels().rmsnorm_forward(y.data_as<T>(), rstd.data_as<float>(), x.data_as<T>(),
                                         require_value(weight_).data_as<W>(), rows, channels_, eps_);
  });
  if (ctx.training) {
    input_ = x;
    rstd_ = rstd;
  }
  return y;
}

Tensor RmsNorm::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "RMSNorm::backward", "a preceding training forward", dy);
  const DType dtype = input_.dtype();
  check_input(dy.dtype() == dtype && dy.shape() == input_.shape(), "RMSNorm::backward",
              std::string(dtype_name(dtype)) + " " + shape_string(input_.shape()), dy);
  const std::int64_t rows = input_.numel() / channels_;
  Tensor dx = new_activation(ctx, input_.shape(), dtype);
  ReplicatedGrads grads(ctx, tp_.get(), {&weight_});
  with_norm_types(dtype, require_value(weight_).dtype(), "RMSNorm::backward", [&]<typename T, typename W>() {
    ctx.device.kernels().rmsnorm_backward(dx.data_as<T>(), grads.grad(0).data_as<W>(), dy.data_as<T>(),
                                          input_.data_as<T>(), require_value(weight_).data_as<W>(),
                                          rstd_.data_as<float>(), rows, channels_);
  });
  grads.finish();
  clear_own_saved();
  return dx;
}

PreNorm::ResidualOutput RmsNorm::forward_residual(Context& ctx, const Tensor& a, const Tensor& b) {
  check_input(b.dtype() == a.dtype() && b.shape() == a.shape(), "RMSNorm (residual)",
              std::string(dtype_name(a.dtype())) + " " + shape_string(a.shape()) + " as the residual stream", b);
  Tensor sum = new_activation(ctx, a.shape(), a.dtype());
  with_element_type(a.dtype(), "RMSNorm (residual)", [&]<typename T>() {
    ctx.device.kernels().add(sum.data_as<T>(), a.data_as<T>(), b.data_as<T>(), a.numel());
  });
  Tensor out = forward(ctx, sum);
  return {std::move(sum), std::move(out)};
}

Tensor RmsNorm::backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) {
  check_input(input_.defined() && dresidual.dtype() == input_.dtype() && dresidual.shape() == input_.shape(),
              "RMSNorm::backward",
              std::string("the residual gradient ") + dtype_name(input_.dtype()) + " " + shape_string(input_.shape()),
              dresidual);
  Tensor dx = backward(ctx, dy);
  with_element_type(dx.dtype(), "RMSNorm::backward", [&]<typename T>() {
    ctx.device.kernels().add(dx.data_as<T>(), dx.data_as<T>(), dresidual.data_as<T>(), dx.numel());
  });
  return dx;
}

Tensor RmsNorm::recompute_output(Context& ctx) {
  check_input(input_.defined(), "RMSNorm::recompute_output", "a preceding training forward", input_);
  const DType dtype = input_.dtype();
  const std::int64_t rows = input_.numel() / channels_;
  Tensor y = new_activation(ctx, input_.shape(), dtype);
  // The same kernel on the same input as forward; rstd comes out equal to the kept one.
  Tensor rstd = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  with_norm_types(dtype, require_value(weight_).dtype(), "RMSNorm", [&]<typename T, typename W>() {
    ctx.device.kernels().rmsnorm_forward(y.data_as<T>(), rstd.data_as<float>(), input_.data_as<T>(),
                                         require_value(weight_).data_as<W>(), rows, channels_, eps_);
  });
  return y;
}

}  // namespace tessera
