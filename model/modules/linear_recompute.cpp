// linear_backward_with_input and linear_gelu_backward_with_input: Linear's backward kernels (plain,
// and with the GELU after it) with a caller-supplied input.
#include "tessera/model/modules/linear_recompute.hpp"

#include <stdexcept>

#include "tessera/model/modules/linear.hpp"
#include "tessera/runtime/compute_dtype.hpp"
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
  const DType dtype = x.dtype();
  check_input(is_compute_dtype(dtype) && x.ndim() >= 1 && x.dim(-1) == in, "Linear (recomputed input)",
              rows_of(dtype, in), x);
  check_input(dy.dtype() == dtype && dy.numel() == x.numel() / in * out, "Linear::backward",
              "dy " + rows_of(dtype, out) + " matching the input rows", dy);
  return *layer;
}

// The layer's values and gradients must be in the dtype of its input (the compute dtype).
void check_parameter_dtypes(Parameter& weight, Parameter* bias, DType dtype) {
  for (Parameter* p : {&weight, bias}) {
    if (p == nullptr) continue;
    const Tensor& value = require_value(*p);
    const Tensor& grad = require_grad(*p);
    if (value.dtype() != dtype || grad.dtype() != dtype) {
      throw std::invalid_argument("Linear::backward: parameter '" + p->name + "' is " + dtype_name(value.dtype()) +
                                  " with a " + dtype_name(grad.dtype()) + " gradient, the input " + dtype_name(dtype) +
                                  "; a layer computes in one dtype");
    }
  }
}

}  // namespace

Tensor linear_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& x) {
  const Linear& layer = checked_linear(linear, dy, x);
  const std::int64_t in = layer.in_features(), out = layer.out_features();
  Parameter* weight = own_parameter(linear, "weight");
  Parameter* bias = own_parameter(linear, "bias");
  check_parameter_dtypes(*weight, bias, x.dtype());
  Tensor dx = new_activation(ctx, x.shape(), x.dtype());
  const std::int64_t rows = x.numel() / in;
  with_element_type(x.dtype(), "Linear::backward", [&]<typename T>() {
    ctx.device.kernels().linear_backward(dx.data_as<T>(), require_grad(*weight).data_as<T>(),
                                         bias ? require_grad(*bias).data_as<T>() : nullptr, dy.data_as<T>(),
                                         x.data_as<T>(), require_value(*weight).data_as<T>(), rows, in, out);
  });
  return dx;
}

Tensor linear_gelu_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& pre,
                                       const Tensor& x) {
  const Linear& layer = checked_linear(linear, dy, x);
  const std::int64_t in = layer.in_features(), out = layer.out_features();
  check_input(pre.dtype() == x.dtype() && pre.numel() == dy.numel(), "Linear::backward (GELU)",
              std::string("the pre-activation ") + dtype_name(x.dtype()) + " " + shape_string(dy.shape()), pre);
  Parameter* weight = own_parameter(linear, "weight");
  Parameter* bias = own_parameter(linear, "bias");
  check_parameter_dtypes(*weight, bias, x.dtype());
  Tensor dx = new_activation(ctx, x.shape(), x.dtype());
  Tensor dpre = dy;  // the same storage: the kernel turns d gelu(pre) into d pre in place
  const std::int64_t rows = x.numel() / in;
  with_element_type(x.dtype(), "Linear::backward", [&]<typename T>() {
    ctx.device.kernels().linear_gelu_backward(
        dx.data_as<T>(), require_grad(*weight).data_as<T>(), bias ? require_grad(*bias).data_as<T>() : nullptr,
        dpre.data_as<T>(), pre.data_as<T>(), x.data_as<T>(), require_value(*weight).data_as<T>(), rows, in, out);
  });
  return dx;
}

}  // namespace tessera
