// SwiGluMlp forward/backward: Linear, the SwiGLU kernels, Linear.
#include "tessera/model/modules/swiglu_mlp.hpp"

#include <stdexcept>

#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

Shape with_last(Shape shape, std::int64_t last) {
  shape.back() = last;
  return shape;
}

}  // namespace

namespace {

std::unique_ptr<Linear> gate_up_layer(std::int64_t channels, std::int64_t hidden, float init_std,
                                      const TensorParallel* tp) {
  if (!tp) return std::make_unique<Linear>(channels, 2 * hidden, false, init_std);
  return Linear::column_parallel(channels, {hidden, hidden}, false, init_std, *tp);
}

std::unique_ptr<Linear> swiglu_down_layer(std::int64_t hidden, std::int64_t channels, float init_std,
                                          const TensorParallel* tp) {
  if (!tp) return std::make_unique<Linear>(hidden, channels, false, init_std);
  return Linear::row_parallel(hidden, channels, false, init_std, *tp);
}

}  // namespace

SwiGluMlp::SwiGluMlp(std::int64_t channels, std::int64_t hidden, float init_std, float proj_init_std,
                     std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      hidden_(tp_ ? tp_->divided(hidden, "MLP hidden features") : hidden),
      gate_up_(register_child("gate_up", gate_up_layer(channels, hidden, init_std, tp_.get()))),
      down_(register_child("down", swiglu_down_layer(hidden, channels, proj_init_std, tp_.get()))) {}

Tensor SwiGluMlp::activation(Context& ctx, const Tensor& gate_up) const {
  Tensor h = new_activation(ctx, with_last(gate_up.shape(), hidden_), gate_up.dtype());
  with_element_type(gate_up.dtype(), "SwiGLU", [&]<typename T>() {
    ctx.device.kernels().swiglu_forward(h.data_as<T>(), gate_up.data_as<T>(), gate_up.numel() / (2 * hidden_), hidden_);
  });
  return h;
}

Tensor SwiGluMlp::activation_grad(Context& ctx, const Tensor& dh) {
  const DType dtype = gate_up_out_.dtype();
  check_input(dh.dtype() == dtype, "SwiGLU::backward", dtype_name(dtype), dh);
  Tensor dgate_up = new_activation(ctx, gate_up_out_.shape(), dtype);
  with_element_type(dtype, "SwiGLU::backward", [&]<typename T>() {
    ctx.device.kernels().swiglu_backward(dgate_up.data_as<T>(), dh.data_as<T>(), gate_up_out_.data_as<T>(),
                                         gate_up_out_.numel() / (2 * hidden_), hidden_);
  });
  gate_up_out_ = Tensor();
  return dgate_up;
}

Tensor SwiGluMlp::forward(Context& ctx, const Tensor& x_in) {
  check_input(is_compute_dtype(x_in.dtype()) && x_in.ndim() >= 1 && x_in.dim(-1) == channels_, "SwiGLU",
              rows_of(x_in.dtype(), channels_), x_in);
  const Tensor x = enter_region(tp_.get(), ctx, x_in);
  // kElementwise: the Linear layers keep nothing; backward gets x again and recomputes the activation.
  // Sequence parallel: gate_up keeps nothing, this module keeps x's rows and gathers them again.
  const bool rows =
      recompute_ == RecomputeMode::kKeepAll && keeps_rows(tp_.get(), ctx) && plain_linear(gate_up_) != nullptr;
  Context linear_ctx = ctx;
  if (recompute_ == RecomputeMode::kElementwise) linear_ctx.training = false;
  Context gate_up_ctx = linear_ctx;
  if (rows) gate_up_ctx.training = false;
  Tensor gate_up = gate_up_->forward(gate_up_ctx, x);
  Tensor h = activation(ctx, gate_up);
  if (ctx.training) {
    gate_up_out_ = gate_up;
    if (rows) rows_ = x_in;
  }
  gate_up = Tensor();
  return exit_region(tp_.get(), ctx, down_->forward(linear_ctx, h));
}

Tensor SwiGluMlp::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) {
    throw std::logic_error(
        "SwiGLU::backward: in elementwise-recompute mode the caller passes the input again: "
        "call backward_with_input(ctx, dy, x)");
  }
  check_input(gate_up_out_.defined(), "SwiGLU::backward", "a preceding training forward", dy);
  const Tensor rows = rows_;
  rows_ = Tensor();
  Tensor dgate_up = activation_grad(ctx, down_->backward(ctx, exit_region_backward(tp_.get(), ctx, dy)));
  if (rows.defined()) {
    return enter_region_backward(tp_.get(), ctx,
                                 linear_backward_with_input(ctx, *gate_up_, dgate_up, tp_->enter(ctx, rows)));
  }
  return enter_region_backward(tp_.get(), ctx, gate_up_->backward(ctx, dgate_up));
}

Tensor SwiGluMlp::backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) {
  if (recompute_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  check_input(gate_up_out_.defined(), "SwiGLU::backward", "a preceding training forward", dy);
  Tensor dh =
      linear_backward_with_input(ctx, *down_, exit_region_backward(tp_.get(), ctx, dy), activation(ctx, gate_up_out_));
  Tensor dgate_up = activation_grad(ctx, dh);
  dh = Tensor();
  return enter_region_backward(tp_.get(), ctx,
                               linear_backward_with_input(ctx, *gate_up_, dgate_up, enter_region(tp_.get(), ctx, x)));
}

}  // namespace tessera
