// TransformerBlock forward/backward: two residual branches.
#include "runtime/modules/transformer_block.hpp"

#include "runtime/kernels.hpp"
#include "runtime/modules/causal_self_attention.hpp"
#include "runtime/modules/layer_norm.hpp"
#include "runtime/modules/mlp.hpp"

namespace tessera {
namespace {

// out = a + b, as a new activation.
Tensor residual_add(Context& ctx, const Tensor& a, const Tensor& b) {
  Tensor out = new_activation(ctx, a.shape());
  ctx.device.kernels().add(out.data_as<float>(), a.data_as<float>(), b.data_as<float>(), a.numel());
  return out;
}

}  // namespace

TransformerBlock::TransformerBlock(const TransformerBlockConfig& c)
    : ln_1_(register_child("ln_1", std::make_unique<LayerNorm>(c.channels))),
      attn_(register_child("attn",
                           std::make_unique<CausalSelfAttention>(c.channels, c.heads, c.init_std, c.proj_init_std))),
      ln_2_(register_child("ln_2", std::make_unique<LayerNorm>(c.channels))),
      mlp_(register_child("mlp", std::make_unique<Mlp>(c.channels, c.init_std, c.proj_init_std))) {}

Tensor TransformerBlock::forward(Context& ctx, const Tensor& x) {
  Tensor x1 = residual_add(ctx, x, attn_->forward(ctx, ln_1_->forward(ctx, x)));
  return residual_add(ctx, x1, mlp_->forward(ctx, ln_2_->forward(ctx, x1)));
}

Tensor TransformerBlock::backward(Context& ctx, const Tensor& dy) {
  // y = x1 + mlp(ln_2(x1)): dx1 = dy + ln_2'(mlp'(dy)).
  Tensor dx1 = ln_2_->backward(ctx, mlp_->backward(ctx, dy));
  ctx.device.kernels().add(dx1.data_as<float>(), dx1.data_as<float>(), dy.data_as<float>(), dy.numel());
  // x1 = x + attn(ln_1(x)): dx = dx1 + ln_1'(attn'(dx1)).
  Tensor dx = ln_1_->backward(ctx, attn_->backward(ctx, dx1));
  ctx.device.kernels().add(dx.data_as<float>(), dx.data_as<float>(), dx1.data_as<float>(), dx1.numel());
  return dx;
}

}  // namespace tessera
