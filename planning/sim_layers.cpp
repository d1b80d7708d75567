// Leaf-module shadows: the allocation sequence of linear.cpp, layer_norm.cpp, embedding.cpp,
// lm_head.cpp, cross_entropy_loss.cpp and checkpoint/linear_recompute.cpp, in their order.
#include "planning/sim_layers.hpp"

namespace tessera {

SimTensor SimLinear::forward(SimContext& ctx, const SimTensor& x) {
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  SimTensor y = sim_activation(ctx, out_shape);
  if (ctx.training) input_ = x;
  return y;
}

SimTensor SimLinear::backward(SimContext& ctx, SimTensor) {
  SimTensor dx = sim_activation(ctx, input_.shape());
  input_ = SimTensor();
  return dx;
}

SimTensor sim_linear_backward_with_input(SimContext& ctx, const SimTensor&, const SimTensor& x) {
  return sim_activation(ctx, x.shape());
}

void SimLayerNorm::clear_saved() {
  input_ = SimTensor();
  mean_ = SimTensor();
  rstd_ = SimTensor();
}

SimTensor SimLayerNorm::forward(SimContext& ctx, const SimTensor& x) {
  const std::int64_t rows = x.numel() / x.dim(-1);
  SimTensor y = sim_activation(ctx, x.shape());
  SimTensor mean = sim_activation(ctx, {rows});
  SimTensor rstd = sim_activation(ctx, {rows});
  if (ctx.training) {
    input_ = x;
    mean_ = mean;
    rstd_ = rstd;
  }
  return y;
}

SimTensor SimLayerNorm::recompute_output(SimContext& ctx) {
  const std::int64_t rows = input_.numel() / input_.dim(-1);
  SimTensor y = sim_activation(ctx, input_.shape());
  SimTensor mean = sim_workspace(ctx, {rows});
  SimTensor rstd = sim_workspace(ctx, {rows});
  return y;
}

SimTensor SimLayerNorm::backward(SimContext& ctx, SimTensor) {
  SimTensor dx = sim_activation(ctx, input_.shape());
  clear_saved();
  return dx;
}

SimTensor SimEmbedding::forward(SimContext& ctx, const SimTensor& tokens) {
  SimTensor x = sim_activation(ctx, {tokens.dim(0), tokens.dim(1), channels_});
  if (ctx.training) tokens_ = tokens;
  return x;
}

SimTensor SimEmbedding::backward(SimContext&, SimTensor) {
  tokens_ = SimTensor();
  return SimTensor();
}

SimTensor SimLmHead::forward(SimContext& ctx, const SimTensor& x) {
  SimTensor logits = sim_activation(ctx, {x.dim(0), x.dim(1), vocab_});
  if (ctx.training) input_ = x;
  return logits;
}

SimTensor SimLmHead::backward(SimContext& ctx, SimTensor) {
  SimTensor dx = sim_activation(ctx, input_.shape());
  input_ = SimTensor();
  return dx;
}

void SimCrossEntropyLoss::forward(SimContext& ctx, const SimTensor& logits, const SimTensor& targets) {
  const std::int64_t rows = logits.dim(0) * logits.dim(1);
  SimTensor losses = sim_workspace(ctx, {rows});
  SimTensor lse = sim_activation(ctx, {rows});
  if (ctx.training) {
    logits_ = logits;
    targets_ = targets;
    lse_ = lse;
  }
}

SimTensor SimCrossEntropyLoss::backward(SimContext&) {
  SimTensor dlogits = logits_;
  logits_ = SimTensor();
  targets_ = SimTensor();
  lse_ = SimTensor();
  return dlogits;
}

}  // namespace tessera
