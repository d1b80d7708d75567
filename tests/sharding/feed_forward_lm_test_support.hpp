// A model the project does not ship, written as an embedding program writes one: token embedding ->
// LayerNorm -> Linear + GELU -> Linear + GELU -> Linear (logits). tokens (B,T) i32 -> logits (B,T,V)
// in the compute dtype. Children are the root's direct children, so each is a unit of its own under
// the engine's default policy.
//
// ChildCalls says how the root calls its two GELU layers: through their slots (the contract), or
// past them through `Linear&`s kept at construction, calling Linear::forward_gelu/backward_gelu on
// them (the mistake an engine must catch: those calls skip the slot's hooks).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera::testing {

enum class ChildCalls { kThroughSlots, kPastSlots };

struct FeedForwardLmConfig {
  std::int64_t vocab = 11;
  std::int64_t seq_len = 5;
  std::int64_t channels = 7;  // odd sizes: units do not divide evenly by 2 ranks (padding)
  std::int64_t hidden = 13;
};

class FeedForwardLm final : public Module {
 public:
  FeedForwardLm(const FeedForwardLmConfig& c, ChildCalls calls)
      : calls_(calls),
        embed_(register_child("embed", std::make_unique<Embedding>(c.vocab, c.seq_len, c.channels))),
        ln_(register_child("ln", std::make_unique<LayerNorm>(c.channels))),
        fc1_(register_child("fc1", std::make_unique<Linear>(c.channels, c.hidden, true))),
        fc2_(register_child("fc2", std::make_unique<Linear>(c.hidden, c.hidden, true))),
        head_(register_child("head", std::make_unique<Linear>(c.hidden, c.vocab, false))),
        fc1_kept_(static_cast<Linear&>(*fc1_)),
        fc2_kept_(static_cast<Linear&>(*fc2_)) {}

  std::string type_name() const override { return "FeedForwardLm"; }

  Tensor forward(Context& ctx, const Tensor& tokens) override {
    Tensor x = ln_->forward(ctx, embed_->forward(ctx, tokens));
    x = gelu_layer(ctx, fc1_, fc1_kept_, x, pre1_);
    x = gelu_layer(ctx, fc2_, fc2_kept_, x, pre2_);
    return head_->forward(ctx, x);
  }

  Tensor backward(Context& ctx, Tensor dlogits) override {
    Tensor d = head_->backward(ctx, std::move(dlogits));
    d = gelu_layer_backward(ctx, fc2_, fc2_kept_, d, pre2_);
    d = gelu_layer_backward(ctx, fc1_, fc1_kept_, d, pre1_);
    return embed_->backward(ctx, ln_->backward(ctx, d));
  }

 protected:
  void clear_own_saved() override { pre1_ = pre2_ = Tensor(); }

 private:
  // gelu(layer(x)); keeps the pre-activation (..., out) for backward.
  Tensor gelu_layer(Context& ctx, ModuleSlot& slot, Linear& kept, const Tensor& x, Tensor& pre) {
    if (calls_ == ChildCalls::kPastSlots) {
      Linear::GeluOutput y = kept.forward_gelu(ctx, x);
      pre = std::move(y.pre);
      return std::move(y.out);
    }
    pre = slot->forward(ctx, x);
    Tensor out = new_activation(ctx, pre.shape(), pre.dtype());
    with_element_type(pre.dtype(), "FeedForwardLm", [&]<typename T>() {
      ctx.device.kernels().gelu_forward(out.data_as<T>(), pre.data_as<T>(), pre.numel());
    });
    return out;
  }

  // dy (..., out): the gradient of the GELU output, overwritten with that of the pre-activation.
  Tensor gelu_layer_backward(Context& ctx, ModuleSlot& slot, Linear& kept, Tensor& dy, Tensor& pre) {
    Tensor dx;
    if (calls_ == ChildCalls::kPastSlots) {
      dx = kept.backward_gelu(ctx, dy, pre);
    } else {
      with_element_type(dy.dtype(), "FeedForwardLm", [&]<typename T>() {
        ctx.device.kernels().gelu_backward(dy.data_as<T>(), pre.data_as<T>(), dy.data_as<T>(), dy.numel());
      });
      dx = slot->backward(ctx, dy);
    }
    pre = Tensor();
    return dx;
  }

  ChildCalls calls_;
  ModuleSlot& embed_;
  ModuleSlot& ln_;
  ModuleSlot& fc1_;
  ModuleSlot& fc2_;
  ModuleSlot& head_;
  Linear& fc1_kept_;  // taken before any engine wraps the model: calls through them skip its hooks
  Linear& fc2_kept_;
  Tensor pre1_, pre2_;  // (B,T,hidden) pre-activations kept for backward
};

}  // namespace tessera::testing
