// Shadows of the transformer block and what can wrap it: CausalSelfAttention, Mlp,
// TransformerBlock (RecomputeMode::kKeepAll or kElementwise, the "selective" policy) and
// CheckpointWrapper ("blocks", "every:K"). Same call order and lifetimes as
// runtime/modules/{causal_self_attention,mlp,transformer_block}.cpp and
// runtime/recompute/checkpoint_wrapper.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "planning/sim_layers.hpp"
#include "runtime/modules/recompute_mode.hpp"

namespace tessera {

class SimAttention final : public SimModule {
 public:
  SimAttention(std::int64_t channels, std::int64_t heads, RecomputeMode mode);
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  SimTensor backward_with_input(SimContext& ctx, const SimTensor& dy, const SimTensor& x);
  void clear_saved() override;

 private:
  SimTensor attention_grad(SimContext& ctx, const SimTensor& datt, const SimTensor& probs);

  std::int64_t channels_, heads_;
  RecomputeMode mode_;
  SimLinear qkv_, proj_;
  SimTensor qkv_out_;  // (B,T,3C)
  SimTensor probs_;    // (B,NH,T,T)
};

class SimMlp final : public SimModule {
 public:
  SimMlp(std::int64_t channels, RecomputeMode mode);
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  SimTensor backward_with_input(SimContext& ctx, const SimTensor& dy, const SimTensor& x);
  void clear_saved() override;

 private:
  RecomputeMode mode_;
  SimLinear fc_, proj_;
  SimTensor pre_gelu_;  // (B,T,4C)
};

class SimTransformerBlock final : public SimModule {
 public:
  SimTransformerBlock(std::int64_t channels, std::int64_t heads, RecomputeMode mode);
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  void clear_saved() override;

 private:
  SimTensor backward_recomputing(SimContext& ctx, const SimTensor& dy);

  RecomputeMode mode_;
  SimLayerNorm ln_1_;
  SimAttention attn_;
  SimLayerNorm ln_2_;
  SimMlp mlp_;
};

// CheckpointWrapper: forward keeps the input only; backward recomputes the inner forward first.
class SimCheckpointWrapper final : public SimModule {
 public:
  explicit SimCheckpointWrapper(std::unique_ptr<SimModule> inner) : inner_(std::move(inner)) {}
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  void clear_saved() override;

 private:
  std::unique_ptr<SimModule> inner_;
  SimTensor input_;
};

}  // namespace tessera
