// TransformerBlock forward/backward: two residual branches.
#include "runtime/modules/transformer_block.hpp"

#include <stdexcept>

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

// The child in `slot` as its concrete type; selective recomputation calls their extra entry points.
template <typename T>
T& child_as(ModuleSlot& slot, const char* expected) {
  auto* typed = dynamic_cast<T*>(slot.module.get());
  if (typed == nullptr) {
    throw std::invalid_argument("TransformerBlock: selective recomputation needs child '" + slot.name + "' to be a " +
                                expected + ", found " + slot->type_name() +
                                "; do not wrap a block's children when recomputing selectively");
  }
  return *typed;
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

void TransformerBlock::set_recompute(RecomputeMode mode) {
  // Check every child before changing any, so a refused call leaves the block as it was.
  child_as<LayerNorm>(ln_1_, "LayerNorm");
  auto& attn = child_as<CausalSelfAttention>(attn_, "CausalSelfAttention");
  child_as<LayerNorm>(ln_2_, "LayerNorm");
  auto& mlp = child_as<Mlp>(mlp_, "MLP");
  attn.set_recompute(mode);
  mlp.set_recompute(mode);
  recompute_ = mode;
}

Tensor TransformerBlock::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) return backward_recomputing(ctx, dy);
  // y = x1 + mlp(ln_2(x1)): dx1 = dy + ln_2'(mlp'(dy)).
  Tensor dx1 = ln_2_->backward(ctx, mlp_->backward(ctx, dy));
  ctx.device.kernels().add(dx1.data_as<float>(), dx1.data_as<float>(), dy.data_as<float>(), dy.numel());
  // x1 = x + attn(ln_1(x)): dx = dx1 + ln_1'(attn'(dx1)).
  Tensor dx = ln_1_->backward(ctx, attn_->backward(ctx, dx1));
  ctx.device.kernels().add(dx.data_as<float>(), dx.data_as<float>(), dx1.data_as<float>(), dx1.numel());
  return dx;
}

Tensor TransformerBlock::backward_recomputing(Context& ctx, const Tensor& dy) {
  auto& ln_1 = child_as<LayerNorm>(ln_1_, "LayerNorm");
  auto& attn = child_as<CausalSelfAttention>(attn_, "CausalSelfAttention");
  auto& ln_2 = child_as<LayerNorm>(ln_2_, "LayerNorm");
  auto& mlp = child_as<Mlp>(mlp_, "MLP");
  // As backward, with each LayerNorm output recomputed just before the branch that consumes it.
  Tensor dx1 = ln_2.backward(ctx, mlp.backward_with_input(ctx, dy, ln_2.recompute_output(ctx)));
  ctx.device.kernels().add(dx1.data_as<float>(), dx1.data_as<float>(), dy.data_as<float>(), dy.numel());
  Tensor dx = ln_1.backward(ctx, attn.backward_with_input(ctx, dx1, ln_1.recompute_output(ctx)));
  ctx.device.kernels().add(dx.data_as<float>(), dx.data_as<float>(), dx1.data_as<float>(), dx1.numel());
  return dx;
}

}  // namespace tessera
