// Activation forward/backward: one Kernels op each way, chosen by the kind, in x's element type.
#include "tessera/model/modules/activation.hpp"

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

const char* activation_name(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kRelu: return "ReLU";
    case ActivationKind::kGelu: return "GELU";
    case ActivationKind::kSilu: return "SiLU";
  }
  return "Activation";
}

Tensor Activation::forward(Context& ctx, const Tensor& x) {
  check_input(x.defined() && is_compute_dtype(x.dtype()), type_name(), "an f32 or bf16 tensor", x);
  Tensor y = new_activation(ctx, x.shape(), x.dtype());
  with_element_type(x.dtype(), activation_name(kind_), [&]<typename T>() {
    const Kernels& k = ctx.device.kernels();
    switch (kind_) {
      case ActivationKind::kRelu: k.relu_forward(y.data_as<T>(), x.data_as<T>(), x.numel()); break;
      case ActivationKind::kGelu: k.gelu_forward(y.data_as<T>(), x.data_as<T>(), x.numel()); break;
      case ActivationKind::kSilu: k.silu_forward(y.data_as<T>(), x.data_as<T>(), x.numel()); break;
    }
  });
  if (ctx.training) input_ = x;
  return y;
}

Tensor Activation::backward(Context& ctx, Tensor dy) {
  const std::string who = type_name() + "::backward";
  check_input(input_.defined(), who, "a preceding training forward", dy);
  check_input(dy.dtype() == input_.dtype() && dy.shape() == input_.shape(), who,
              std::string(dtype_name(input_.dtype())) + " " + shape_string(input_.shape()), dy);
  Tensor dx = new_activation(ctx, dy.shape(), dy.dtype());
  with_element_type(dy.dtype(), activation_name(kind_), [&]<typename T>() {
    const Kernels& k = ctx.device.kernels();
    const std::int64_t n = dy.numel();
    switch (kind_) {
      case ActivationKind::kRelu: k.relu_backward(dx.data_as<T>(), input_.data_as<T>(), dy.data_as<T>(), n); break;
      case ActivationKind::kGelu: k.gelu_backward(dx.data_as<T>(), input_.data_as<T>(), dy.data_as<T>(), n); break;
      case ActivationKind::kSilu: k.silu_backward(dx.data_as<T>(), input_.data_as<T>(), dy.data_as<T>(), n); break;
    }
  });
  input_ = Tensor();
  return dx;
}

}  // namespace tessera
