// linear_backward_with_input and linear_gelu_backward_with_input: Linear's backward kernels (plain,
// and with the GELU after it) with a caller-supplied input.
#include "tessera/model/modules/linear_recompute.hpp"

#include <stdexcept>

#include "tessera/model/modules/linear.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

Parameter* own_parameter(Module& module, const std::string& name) {
  for (Parameter* p : module.own_parameters()) {
    if (p->name == name) return p;
  }
  return nullptr;
}

// `linear` as a Linear whose input x and output gradient dy have matching shapes (throws otherwise).
Linear& checked_linear(Module& linear, const Tensor& dy, const Tensor& x) {
  auto* layer = dynamic_cast<Linear*>(&linear);
  if (layer == nullptr) {
    throw std::invalid_argument("selective recomputation expects a Linear layer here, got " + linear.type_name() +
                                "; apply selective recomputation to unwrapped TransformerBlocks");
  }
  const std::int64_t in = layer->in_features(), out = layer->out_features();
  check_input(x.dtype() == DType::kF32 && x.ndim() >= 1 && x.dim(-1) == in, "Linear (recomputed input)",
              "f32 (..., " + std::to_string(in) + ")", x);
  check_input(dy.dtype() == DType::kF32 && dy.numel() == x.numel() / in * out, "Linear::backward",
              "dy f32 (..., " + std::to_string(out) + ") matching the input rows", dy);
  return *layer;
}

}  // namespace

Tensor linear_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& x) {
  const Linear& layer = checked_linear(linear, dy, x);
  const std::int64_t in = layer.in_features(), out = layer.out_features();
  Parameter* weight = own_parameter(linear, "weight");
  Parameter* bias = own_parameter(linear, "bias");
  Tensor dx = new_activation(ctx, x.shape());
  const std::int64_t rows = x.numel() / in;
  ctx.device.kernels().linear_backward(dx.data_as<float>(), require_grad(*weight).data_as<float>(),
                                       bias ? require_grad(*bias).data_as<float>() : nullptr, dy.data_as<float>(),
                                       x.data_as<float>(), require_value(*weight).data_as<float>(), rows, in, out);
  return dx;
}

Tensor linear_gelu_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& pre,
                                       const Tensor& x) {
  const Linear& layer = checked_linear(linear, dy, x);
  const std::int64_t in = layer.in_features(), out = layer.out_features();
  check_input(pre.dtype() == DType::kF32 && pre.numel() == dy.numel(), "Linear::backward (GELU)",
              "the pre-activation f32 " + shape_string(dy.shape()), pre);
  Parameter* weight = own_parameter(linear, "weight");
  Parameter* bias = own_parameter(linear, "bias");
  Tensor dx = new_activation(ctx, x.shape());
  Tensor dpre = dy;  // the same storage: the kernel turns d gelu(pre) into d pre in place
  const std::int64_t rows = x.numel() / in;
  ctx.device.kernels().linear_gelu_backward(dx.data_as<float>(), require_grad(*weight).data_as<float>(),
                                            bias ? require_grad(*bias).data_as<float>() : nullptr,
                                            dpre.data_as<float>(), pre.data_as<float>(), x.data_as<float>(),
                                            require_value(*weight).data_as<float>(), rows, in, out);
  return dx;
}

}  // namespace tessera
