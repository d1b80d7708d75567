// MLP forward/backward: Linear, GELU kernel, Linear. When fc is a plain Linear (not wrapped) the
// GELU runs fused with it (Linear::forward_gelu / linear_gelu_backward); a wrapped fc (an FSDP unit,
// a checkpoint wrapper) runs through its slot with the GELU kernel after it — the same bits.
#include "tessera/model/modules/mlp.hpp"

#include <stdexcept>

#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

// The child in `slot` when it is a plain Linear (the fused GELU path), else null.
Linear* plain_linear(ModuleSlot& slot) { return dynamic_cast<Linear*>(slot.module.get()); }

// gelu(h) as a new activation of h's dtype.
Tensor gelu(Context& ctx, const Tensor& h) {
  Tensor g = new_activation(ctx, h.shape(), h.dtype());
  with_element_type(h.dtype(), "MLP", [&]<typename T>() {
    ctx.device.kernels().gelu_forward(g.data_as<T>(), h.data_as<T>(), h.numel());
  });
  return g;
}

}  // namespace

Mlp::Mlp(std::int64_t channels, float init_std, float proj_init_std, std::int64_t hidden)
    : channels_(channels),
      fc_(register_child("fc", std::make_unique<Linear>(channels, hidden > 0 ? hidden : 4 * channels, true, init_std))),
      proj_(register_child(
          "proj", std::make_unique<Linear>(hidden > 0 ? hidden : 4 * channels, channels, true, proj_init_std))) {}

Tensor Mlp::forward(Context& ctx, const Tensor& x) {
  // kElementwise: the Linear layers keep nothing; backward gets x again and recomputes GELU.
  Context linear_ctx = ctx;
  if (recompute_ == RecomputeMode::kElementwise) linear_ctx.training = false;
  Tensor h, g;
  if (Linear* fc = plain_linear(fc_)) {
    Linear::GeluOutput y = fc->forward_gelu(linear_ctx, x);
    h = std::move(y.pre);
    g = std::move(y.out);
  } else {
    h = fc_->forward(linear_ctx, x);
    g = gelu(ctx, h);
  }
  if (ctx.training) pre_gelu_ = h;
  return proj_->forward(linear_ctx, g);
}

Tensor Mlp::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) {
    throw std::logic_error(
        "MLP::backward: in elementwise-recompute mode the caller passes the input again: "
        "call backward_with_input(ctx, dy, x)");
  }
  check_input(pre_gelu_.defined(), "MLP::backward", "a preceding training forward", dy);
  Tensor dg = proj_->backward(ctx, dy);
  if (Linear* fc = plain_linear(fc_)) {
    Tensor dx = fc->backward_gelu(ctx, dg, pre_gelu_);  // dg becomes d pre in place
    pre_gelu_ = Tensor();
    return dx;
  }
  // dg is not needed after this: compute dh in place.
  check_input(dg.dtype() == pre_gelu_.dtype(), "MLP::backward", dtype_name(pre_gelu_.dtype()), dg);
  with_element_type(dg.dtype(), "MLP::backward", [&]<typename T>() {
    ctx.device.kernels().gelu_backward(dg.data_as<T>(), pre_gelu_.data_as<T>(), dg.data_as<T>(), dg.numel());
  });
  pre_gelu_ = Tensor();
  return fc_->backward(ctx, dg);
}

Tensor Mlp::backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) {
  if (recompute_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  check_input(pre_gelu_.defined(), "MLP::backward", "a preceding training forward", dy);
  Tensor g = gelu(ctx, pre_gelu_);  // recomputed: the same GELU on the kept fc output
  Tensor dg = linear_backward_with_input(ctx, *proj_, dy, g);
  g = Tensor();
  Tensor dx = linear_gelu_backward_with_input(ctx, *fc_, dg, pre_gelu_, x);  // dg becomes d pre in place
  pre_gelu_ = Tensor();
  return dx;
}

}  // namespace tessera
