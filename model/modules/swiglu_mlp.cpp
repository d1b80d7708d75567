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

SwiGluMlp::SwiGluMlp(std::int64_t channels, std::int64_t hidden, float init_std, float proj_init_std)
    : channels_(channels),
      hidden_(hidden),
      gate_up_(register_child("gate_up", std::make_unique<Linear>(channels, 2 * hidden, false, init_std))),
      down_(register_child("down", std::make_unique<Linear>(hidden, channels, false, proj_init_std))) {}

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

Tensor SwiGluMlp::forward(Context& ctx, const Tensor& x) {
  check_input(is_compute_dtype(x.dtype()) && x.ndim() >= 1 && x.dim(-1) == channels_, "SwiGLU",
              rows_of(x.dtype(), channels_), x);
  // kElementwise: the Linear layers keep nothing; backward gets x again and recomputes the activation.
  Context linear_ctx = ctx;
  if (recompute_ == RecomputeMode::kElementwise) linear_ctx.training = false;
  Tensor gate_up = gate_up_->forward(linear_ctx, x);
  Tensor h = activation(ctx, gate_up);
  if (ctx.training) gate_up_out_ = gate_up;
  gate_up = Tensor();
  return down_->forward(linear_ctx, h);
}

Tensor SwiGluMlp::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) {
    throw std::logic_error(
        "SwiGLU::backward: in elementwise-recompute mode the caller passes the input again: "
        "call backward_with_input(ctx, dy, x)");
  }
  check_input(gate_up_out_.defined(), "SwiGLU::backward", "a preceding training forward", dy);
  Tensor dgate_up = activation_grad(ctx, down_->backward(ctx, dy));
  return gate_up_->backward(ctx, dgate_up);
}

Tensor SwiGluMlp::backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) {
  if (recompute_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  check_input(gate_up_out_.defined(), "SwiGLU::backward", "a preceding training forward", dy);
  Tensor dh = linear_backward_with_input(ctx, *down_, dy, activation(ctx, gate_up_out_));
  Tensor dgate_up = activation_grad(ctx, dh);
  dh = Tensor();
  return linear_backward_with_input(ctx, *gate_up_, dgate_up, x);
}

}  // namespace tessera
