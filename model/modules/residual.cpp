// Residual: the skip connection's add in forward and in backward.
#include "tessera/model/modules/residual.hpp"

#include <stdexcept>

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

// out = a + b (out may be a's storage).
void add_into(Context& ctx, Tensor& out, const Tensor& a, const Tensor& b, const char* who) {
  with_element_type(a.dtype(), who, [&]<typename T>() {
    ctx.device.kernels().add(out.data_as<T>(), a.data_as<T>(), b.data_as<T>(), a.numel());
  });
}

std::string what_of(const Tensor& x) { return std::string(dtype_name(x.dtype())) + " " + shape_string(x.shape()); }

}  // namespace

Residual::Residual(std::unique_ptr<Module> inner)
    : inner_(register_child("", [&inner]() {
        if (!inner) throw std::invalid_argument("Residual: the inner module is null");
        return std::move(inner);
      }())) {}

Tensor Residual::forward(Context& ctx, const Tensor& x) {
  check_input(x.defined() && is_compute_dtype(x.dtype()), "Residual", "an f32 or bf16 tensor", x);
  Tensor h = inner_->forward(ctx, x);
  check_input(h.defined() && h.dtype() == x.dtype() && h.shape() == x.shape(), "Residual(" + inner_->type_name() + ")",
              "an inner output of its input's " + what_of(x), h);
  Tensor y = new_activation(ctx, x.shape(), x.dtype());
  add_into(ctx, y, x, h, "Residual");
  return y;
}

Tensor Residual::backward(Context& ctx, Tensor dy) {
  Tensor dinner = inner_->backward(ctx, dy);
  check_input(dinner.defined() && dinner.dtype() == dy.dtype() && dinner.shape() == dy.shape(),
              "Residual(" + inner_->type_name() + ")::backward", "an inner input gradient of " + what_of(dy), dinner);
  // The inner module's gradient is ours to overwrite, unless it is dy itself (an identity inner).
  Tensor dx = dinner.storage() == dy.storage() ? new_activation(ctx, dy.shape(), dy.dtype()) : dinner;
  add_into(ctx, dx, dinner, dy, "Residual::backward");
  return dx;
}

}  // namespace tessera
