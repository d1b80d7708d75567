// TransformerBlock forward/backward: two residual branches. The residual add in front of ln_2 and
// the residual gradients added to both norms' input gradients go through the norms (PreNorm: fused
// into the LayerNorm kernels) when the norm children are plain (not wrapped); the same bits either way.
#include "tessera/model/modules/transformer_block.hpp"

#include <stdexcept>

#include "tessera/model/modules/causal_self_attention.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/mlp.hpp"
#include "tessera/model/modules/rms_norm.hpp"
#include "tessera/model/modules/swiglu_mlp.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

// out = a + b into `out` (which may alias a), all of one dtype.
void add_into(Context& ctx, Tensor& out, const Tensor& a, const Tensor& b) {
  check_input(b.dtype() == a.dtype() && b.shape() == a.shape(), "TransformerBlock (residual)",
              std::string(dtype_name(a.dtype())) + " " + shape_string(a.shape()), b);
  with_element_type(a.dtype(), "TransformerBlock", [&]<typename T>() {
    ctx.device.kernels().add(out.data_as<T>(), a.data_as<T>(), b.data_as<T>(), a.numel());
  });
}

// out = a + b, as a new activation.
Tensor residual_add(Context& ctx, const Tensor& a, const Tensor& b) {
  Tensor out = new_activation(ctx, a.shape(), a.dtype());
  add_into(ctx, out, a, b);
  return out;
}

// The child in `slot` when it is a plain norm (the fused residual path), else null.
PreNorm* plain_norm(ModuleSlot& slot) { return dynamic_cast<PreNorm*>(slot.module.get()); }

// dx = ln.backward(dy) + dresidual: fused when `slot` holds a plain LayerNorm.
Tensor layer_norm_backward_residual(Context& ctx, ModuleSlot& slot, Tensor dy, const Tensor& dresidual) {
  if (PreNorm* ln = plain_norm(slot)) return ln->backward_residual(ctx, dy, dresidual);
  Tensor dx = slot->backward(ctx, std::move(dy));
  add_into(ctx, dx, dx, dresidual);
  return dx;
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

namespace {

std::unique_ptr<Module> norm_of(const TransformerBlockConfig& c) {
  if (c.llama) return std::make_unique<RmsNorm>(c.channels, c.norm_eps, c.tp);
  return std::make_unique<LayerNorm>(c.channels, c.norm_eps, c.tp);
}

std::unique_ptr<Module> attention_of(const TransformerBlockConfig& c) {
  if (c.llama) {
    return std::make_unique<CausalSelfAttention>(c.channels, c.heads, c.init_std, c.proj_init_std,
                                                 RotaryAttentionOptions{c.kv_heads, c.rope_theta}, c.tp);
  }
  return std::make_unique<CausalSelfAttention>(c.channels, c.heads, c.init_std, c.proj_init_std, c.tp);
}

std::unique_ptr<Module> mlp_of(const TransformerBlockConfig& c) {
  if (c.llama) {
    if (c.ffn_dim <= 0) throw std::invalid_argument("TransformerBlock: a Llama block needs its ffn_dim");
    return std::make_unique<SwiGluMlp>(c.channels, c.ffn_dim, c.init_std, c.proj_init_std, c.tp);
  }
  return std::make_unique<Mlp>(c.channels, c.init_std, c.proj_init_std, c.ffn_dim, c.tp);
}

}  // namespace

TransformerBlock::TransformerBlock(const TransformerBlockConfig& c)
    : ln_1_(register_child("ln_1", norm_of(c))),
      attn_(register_child("attn", attention_of(c))),
      ln_2_(register_child("ln_2", norm_of(c))),
      mlp_(register_child("mlp", mlp_of(c))) {}

Tensor TransformerBlock::forward(Context& ctx, const Tensor& x) {
  Tensor x1, h;  // x1 = x + attn(ln_1(x)); h = ln_2(x1)
  {
    Tensor a = attn_->forward(ctx, ln_1_->forward(ctx, x));
    if (PreNorm* ln_2 = plain_norm(ln_2_)) {
      PreNorm::ResidualOutput r = ln_2->forward_residual(ctx, x, a);
      x1 = std::move(r.sum);
      h = std::move(r.out);
    } else {
      x1 = residual_add(ctx, x, a);
      a = Tensor();
      h = ln_2_->forward(ctx, x1);
    }
  }
  return residual_add(ctx, x1, mlp_->forward(ctx, h));
}

void TransformerBlock::set_recompute(RecomputeMode mode) {
  // Check every child before changing any, so a refused call leaves the block as it was.
  child_as<PreNorm>(ln_1_, "norm");
  auto& attn = child_as<CausalSelfAttention>(attn_, "CausalSelfAttention");
  child_as<PreNorm>(ln_2_, "norm");
  auto& mlp = child_as<ElementwiseRecomputable>(mlp_, "MLP");
  attn.set_recompute(mode);
  mlp.set_recompute(mode);
  recompute_ = mode;
}

Tensor TransformerBlock::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) return backward_recomputing(ctx, dy);
  // y = x1 + mlp(ln_2(x1)): dx1 = ln_2'(mlp'(dy)) + dy.
  Tensor dx1 = layer_norm_backward_residual(ctx, ln_2_, mlp_->backward(ctx, dy), dy);
  // x1 = x + attn(ln_1(x)): dx = ln_1'(attn'(dx1)) + dx1.
  return layer_norm_backward_residual(ctx, ln_1_, attn_->backward(ctx, dx1), dx1);
}

Tensor TransformerBlock::backward_recomputing(Context& ctx, const Tensor& dy) {
  auto& ln_1 = child_as<PreNorm>(ln_1_, "norm");
  auto& attn = child_as<CausalSelfAttention>(attn_, "CausalSelfAttention");
  auto& ln_2 = child_as<PreNorm>(ln_2_, "norm");
  auto& mlp = child_as<ElementwiseRecomputable>(mlp_, "MLP");
  // As backward, with each LayerNorm output recomputed just before the branch that consumes it.
  Tensor dx1 = ln_2.backward_residual(ctx, mlp.backward_with_input(ctx, dy, ln_2.recompute_output(ctx)), dy);
  return ln_1.backward_residual(ctx, attn.backward_with_input(ctx, dx1, ln_1.recompute_output(ctx)), dx1);
}

}  // namespace tessera
