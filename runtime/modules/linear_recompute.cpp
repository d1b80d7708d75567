// linear_backward_with_input: Linear's backward kernel with a caller-supplied input.
#include "runtime/modules/linear_recompute.hpp"

#include <stdexcept>

#include "runtime/kernels.hpp"
#include "runtime/modules/linear.hpp"

namespace tessera {
namespace {

Parameter* own_parameter(Module& module, const std::string& name) {
  for (Parameter* p : module.own_parameters()) {
    if (p->name == name) return p;
  }
  return nullptr;
}

}  // namespace

Tensor linear_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& x) {
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
  Parameter* weight = own_parameter(linear, "weight");
  Parameter* bias = own_parameter(linear, "bias");
  Tensor dx = new_activation(ctx, x.shape());
  const std::int64_t rows = x.numel() / in;
  ctx.device.kernels().linear_backward(dx.data_as<float>(), require_grad(*weight).data_as<float>(),
                                       bias ? require_grad(*bias).data_as<float>() : nullptr, dy.data_as<float>(),
                                       x.data_as<float>(), require_value(*weight).data_as<float>(), rows, in, out);
  return dx;
}

}  // namespace tessera
