// Shadows of the leaf modules (runtime/modules/): Linear, LayerNorm, Embedding, LmHead, and the
// fused CrossEntropyLoss. Shapes are the real ones: x (B,T,C), tokens (B,T), logits (B,T,V).
#pragma once

#include <cstdint>

#include "planning/sim_module.hpp"

namespace tessera {

// Linear: y (..., out) = x (..., in) W^T + b; keeps its input when training.
class SimLinear final : public SimModule {
 public:
  SimLinear(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  void clear_saved() override { input_ = SimTensor(); }

 private:
  std::int64_t in_, out_;
  SimTensor input_;
};

// linear_backward_with_input (runtime/modules/linear_recompute.cpp): dx (..., in) from a
// caller-supplied input.
SimTensor sim_linear_backward_with_input(SimContext& ctx, const SimTensor& dy, const SimTensor& x);

// LayerNorm: keeps its input and the (rows) mean and rstd.
class SimLayerNorm final : public SimModule {
 public:
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  // LayerNorm::recompute_output: a new output, statistics in short-lived workspace.
  SimTensor recompute_output(SimContext& ctx);
  void clear_saved() override;

 private:
  SimTensor input_, mean_, rstd_;
};

// Embedding: tokens (B,T) -> x (B,T,C); keeps the tokens (the caller's buffer).
class SimEmbedding final : public SimModule {
 public:
  explicit SimEmbedding(std::int64_t channels) : channels_(channels) {}
  SimTensor forward(SimContext& ctx, const SimTensor& tokens) override;
  SimTensor backward(SimContext& ctx, SimTensor dy) override;
  void clear_saved() override { tokens_ = SimTensor(); }

 private:
  std::int64_t channels_;
  SimTensor tokens_;
};

// LmHead (tied to wte): x (B,T,C) -> logits (B,T,V); keeps its input.
class SimLmHead final : public SimModule {
 public:
  explicit SimLmHead(std::int64_t vocab) : vocab_(vocab) {}
  SimTensor forward(SimContext& ctx, const SimTensor& x) override;
  SimTensor backward(SimContext& ctx, SimTensor dlogits) override;
  void clear_saved() override { input_ = SimTensor(); }

 private:
  std::int64_t vocab_;
  SimTensor input_;
};

// CrossEntropyLoss: forward keeps logits, targets and a (B*T) logsumexp; backward returns the
// logits' own storage as dlogits (in place) and drops the rest.
class SimCrossEntropyLoss {
 public:
  void forward(SimContext& ctx, const SimTensor& logits, const SimTensor& targets);
  SimTensor backward(SimContext& ctx);

 private:
  SimTensor logits_, targets_, lse_;
};

}  // namespace tessera
