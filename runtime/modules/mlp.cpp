// MLP forward/backward: Linear, GELU kernel, Linear.
#include "runtime/modules/mlp.hpp"

#include "runtime/kernels.hpp"
#include "runtime/modules/linear.hpp"

namespace tessera {

Mlp::Mlp(std::int64_t channels, float init_std, float proj_init_std)
    : channels_(channels),
      fc_(register_child("fc", std::make_unique<Linear>(channels, 4 * channels, true, init_std))),
      proj_(register_child("proj", std::make_unique<Linear>(4 * channels, channels, true, proj_init_std))) {}

Tensor Mlp::forward(Context& ctx, const Tensor& x) {
  Tensor h = fc_->forward(ctx, x);
  Tensor g = new_activation(ctx, h.shape());
  ctx.device.kernels().gelu_forward(g.data_as<float>(), h.data_as<float>(), h.numel());
  if (ctx.training) pre_gelu_ = h;
  return proj_->forward(ctx, g);
}

Tensor Mlp::backward(Context& ctx, const Tensor& dy) {
  check_input(pre_gelu_.defined(), "MLP::backward", "a preceding training forward", dy);
  Tensor dg = proj_->backward(ctx, dy);
  // dg is not needed after this: compute dh in place.
  ctx.device.kernels().gelu_backward(dg.data_as<float>(), pre_gelu_.data_as<float>(), dg.data_as<float>(),
                                     dg.numel());
  pre_gelu_ = Tensor();
  return fc_->backward(ctx, dg);
}

}  // namespace tessera
