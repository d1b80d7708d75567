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

// gelu(h) as a new activation of h's dtype.
Tensor gelu(Context& ctx, const Tensor& h) {
  Tensor g = new_activation(ctx, h.shape(), h.dtype());
  with_element_type(h.dtype(), "MLP", [&]<typename T>() {
    ctx.device.kernels().gelu_forward(g.data_as<T>(), h.data_as<T>(), h.numel());
  });
  return g;
}

}  // namespace

namespace {

std::unique_ptr<Linear> fc_layer(std::int64_t channels, std::int64_t hidden, float init_std, const TensorParallel* tp) {
  if (!tp) return std::make_unique<Linear>(channels, hidden, true, init_std);
  tp->divided(hidden, "MLP hidden features");
  return Linear::column_parallel(channels, {hidden}, true, init_std, *tp);
}

std::unique_ptr<Linear> down_layer(std::int64_t hidden, std::int64_t channels, bool bias, float init_std,
                                   const TensorParallel* tp) {
  if (!tp) return std::make_unique<Linear>(hidden, channels, bias, init_std);
  return Linear::row_parallel(hidden, channels, bias, init_std, *tp);
}

}  // namespace

Mlp::Mlp(std::int64_t channels, float init_std, float proj_init_std, std::int64_t hidden,
         std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      fc_(register_child("fc", fc_layer(channels, hidden > 0 ? hidden : 4 * channels, init_std, tp_.get()))),
      proj_(register_child("proj",
                           down_layer(hidden > 0 ? hidden : 4 * channels, channels, true, proj_init_std, tp_.get()))) {}

Tensor Mlp::forward(Context& ctx, const Tensor& x_in) {
  const Tensor x = enter_region(tp_.get(), ctx, x_in);
  // kElementwise: the Linear layers keep nothing; backward gets x again and recomputes GELU.
  // Sequence parallel: fc keeps nothing, this module keeps x's rows and gathers them again.
  Linear* fc = plain_linear(fc_);
  const bool rows = recompute_ == RecomputeMode::kKeepAll && keeps_rows(tp_.get(), ctx) && fc != nullptr;
  Context linear_ctx = ctx;
  if (recompute_ == RecomputeMode::kElementwise) linear_ctx.training = false;
  Context fc_ctx = linear_ctx;
  if (rows) fc_ctx.training = false;
  Tensor h, g;
  if (fc != nullptr) {
    Linear::GeluOutput y = fc->forward_gelu(fc_ctx, x);
    h = std::move(y.pre);
    g = std::move(y.out);
  } else {
    h = fc_->forward(fc_ctx, x);
    g = gelu(ctx, h);
  }
  if (ctx.training) {
    pre_gelu_ = h;
    if (rows) rows_ = x_in;
  }
  return exit_region(tp_.get(), ctx, proj_->forward(linear_ctx, g));
}

Tensor Mlp::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) {
    throw std::logic_error(
        "MLP::backward: in elementwise-recompute mode the caller passes the input again: "
        "call backward_with_input(ctx, dy, x)");
  }
  check_input(pre_gelu_.defined(), "MLP::backward", "a preceding training forward", dy);
  Tensor dg = proj_->backward(ctx, exit_region_backward(tp_.get(), ctx, dy));
  if (rows_.defined()) {  // dg becomes d pre in place
    Tensor dx = linear_gelu_backward_with_input(ctx, *fc_, dg, pre_gelu_, tp_->enter(ctx, rows_));
    clear_own_saved();
    return enter_region_backward(tp_.get(), ctx, std::move(dx));
  }
  if (Linear* fc = plain_linear(fc_)) {
    Tensor dx = fc->backward_gelu(ctx, dg, pre_gelu_);  // dg becomes d pre in place
    pre_gelu_ = Tensor();
    return enter_region_backward(tp_.get(), ctx, std::move(dx));
  }
  // dg is not needed after this: compute dh in place.
  check_input(dg.dtype() == pre_gelu_.dtype(), "MLP::backward", dtype_name(pre_gelu_.dtype()), dg);
  with_element_type(dg.dtype(), "MLP::backward", [&]<typename T>() {
    ctx.device.kernels().gelu_backward(dg.data_as<T>(), pre_gelu_.data_as<T>(), dg.data_as<T>(), dg.numel());
  });
  pre_gelu_ = Tensor();
  return enter_region_backward(tp_.get(), ctx, fc_->backward(ctx, dg));
}

Tensor Mlp::backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) {
  if (recompute_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  check_input(pre_gelu_.defined(), "MLP::backward", "a preceding training forward", dy);
  Tensor g = gelu(ctx, pre_gelu_);  // recomputed: the same GELU on the kept fc output
  Tensor dg = linear_backward_with_input(ctx, *proj_, exit_region_backward(tp_.get(), ctx, dy), g);
  g = Tensor();
  // dg becomes d pre in place
  Tensor dx = linear_gelu_backward_with_input(ctx, *fc_, dg, pre_gelu_, enter_region(tp_.get(), ctx, x));
  pre_gelu_ = Tensor();
  return enter_region_backward(tp_.get(), ctx, std::move(dx));
}

}  // namespace tessera
