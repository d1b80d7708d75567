// LmHead forward/backward through the linear kernels (no bias), gradient into its (tied or own) weight.
#include "tessera/model/modules/lm_head.hpp"

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

LmHead::LmHead(Parameter& tied_weight, std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)), tied_(true), weight_(tied_weight) {}

LmHead::LmHead(std::int64_t vocab_size, std::int64_t channels, float init_std, std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      tied_(false),
      weight_(register_parameter("weight", {vocab_size, channels}, ParameterInit::normal(init_std), true,
                                 tp_ ? tp_->split(0, {vocab_size}) : TensorSlice{})) {}

Tensor LmHead::forward(Context& ctx, const Tensor& x_in) {
  const Tensor x = enter_region(tp_.get(), ctx, x_in);
  const std::int64_t vocab = weight_.shape[0], channels = weight_.shape[1];
  const Tensor& w = require_value(weight_);
  check_input(x.ndim() == 3 && x.dim(2) == channels && x.dtype() == w.dtype(), "LmHead",
              std::string(dtype_name(w.dtype())) + " (B, T, " + std::to_string(channels) + ")", x);
  Tensor logits = new_activation(ctx, {x.dim(0), x.dim(1), vocab}, w.dtype());
  with_element_type(w.dtype(), "LmHead", [&]<typename T>() {
    ctx.device.kernels().linear_forward(logits.data_as<T>(), x.data_as<T>(), w.data_as<T>(), nullptr,
                                        x.dim(0) * x.dim(1), channels, vocab);
  });
  if (ctx.training) input_ = keeps_rows(tp_.get(), ctx) ? x_in : x;  // rows: gathered again in backward
  return logits;
}

Tensor LmHead::backward(Context& ctx, Tensor dlogits) {
  check_input(input_.defined(), "LmHead::backward", "a preceding training forward", dlogits);
  // Sequence parallel: forward kept this rank's rows; the whole input again.
  const Tensor input = tp_ && tp_->sequence_parallel() ? tp_->enter(ctx, input_) : input_;
  input_ = Tensor();
  const std::int64_t vocab = weight_.shape[0], channels = weight_.shape[1];
  const DType dtype = input.dtype();
  check_input(dlogits.dtype() == dtype && require_grad(weight_).dtype() == dtype, "LmHead::backward",
              std::string("logit gradients ") + dtype_name(dtype) + " as the input", dlogits);
  Tensor dx = new_activation(ctx, input.shape(), dtype);
  with_element_type(dtype, "LmHead::backward", [&]<typename T>() {
    ctx.device.kernels().linear_backward(dx.data_as<T>(), require_grad(weight_).data_as<T>(), nullptr,
                                         dlogits.data_as<T>(), input.data_as<T>(), require_value(weight_).data_as<T>(),
                                         input.dim(0) * input.dim(1), channels, vocab);
  });
  return enter_region_backward(tp_.get(), ctx, std::move(dx));
}

}  // namespace tessera
