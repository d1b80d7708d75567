// Transformer-block shadows: every allocation, kept tensor and free of the attention, MLP, block
// and checkpoint-wrapper code, in the same statements (temporaries die where theirs do).
#include "planning/sim_block.hpp"

namespace tessera {
namespace {

SimTensor sim_residual_add(SimContext& ctx, const SimTensor& a, const SimTensor&) {
  return sim_activation(ctx, a.shape());
}

}  // namespace

SimAttention::SimAttention(std::int64_t channels, std::int64_t heads, RecomputeMode mode)
    : channels_(channels), heads_(heads), mode_(mode), qkv_(channels, 3 * channels), proj_(channels, channels) {}

void SimAttention::clear_saved() {
  qkv_out_ = SimTensor();
  probs_ = SimTensor();
  qkv_.clear_saved();
  proj_.clear_saved();
}

SimTensor SimAttention::forward(SimContext& ctx, const SimTensor& x) {
  const std::int64_t b = x.dim(0), t = x.dim(1);
  SimContext qkv_ctx = ctx;
  if (mode_ == RecomputeMode::kElementwise) qkv_ctx.training = false;
  SimTensor qkv = qkv_.forward(qkv_ctx, x);
  SimTensor probs = sim_activation(ctx, {b, heads_, t, t});
  SimTensor att = sim_activation(ctx, {b, t, channels_});
  if (ctx.training) {
    qkv_out_ = qkv;
    if (mode_ == RecomputeMode::kKeepAll) probs_ = probs;
  }
  probs = SimTensor();
  return proj_.forward(ctx, att);
}

SimTensor SimAttention::backward(SimContext& ctx, SimTensor dy) {
  SimTensor dqkv = attention_grad(ctx, proj_.backward(ctx, dy), probs_);
  return qkv_.backward(ctx, dqkv);
}

SimTensor SimAttention::backward_with_input(SimContext& ctx, const SimTensor& dy, const SimTensor& x) {
  if (mode_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  const std::int64_t b = qkv_out_.dim(0), t = qkv_out_.dim(1);
  SimTensor dqkv;
  {
    SimTensor datt = proj_.backward(ctx, dy);
    SimTensor probs = sim_activation(ctx, {b, heads_, t, t});
    SimTensor att = sim_workspace(ctx, {b, t, channels_});
    att = SimTensor();
    dqkv = attention_grad(ctx, datt, probs);
  }
  return sim_linear_backward_with_input(ctx, dqkv, x);
}

SimTensor SimAttention::attention_grad(SimContext& ctx, const SimTensor&, const SimTensor&) {
  const std::int64_t b = qkv_out_.dim(0), t = qkv_out_.dim(1);
  SimTensor dqkv = sim_activation(ctx, qkv_out_.shape());
  {
    SimTensor scratch = sim_workspace(ctx, {b, heads_, t, t});
  }
  qkv_out_ = SimTensor();  // clear_own_saved()
  probs_ = SimTensor();
  return dqkv;
}

SimMlp::SimMlp(std::int64_t channels, RecomputeMode mode)
    : mode_(mode), fc_(channels, 4 * channels), proj_(4 * channels, channels) {}

void SimMlp::clear_saved() {
  pre_gelu_ = SimTensor();
  fc_.clear_saved();
  proj_.clear_saved();
}

SimTensor SimMlp::forward(SimContext& ctx, const SimTensor& x) {
  SimContext linear_ctx = ctx;
  if (mode_ == RecomputeMode::kElementwise) linear_ctx.training = false;
  SimTensor h = fc_.forward(linear_ctx, x);
  SimTensor g = sim_activation(ctx, h.shape());
  if (ctx.training) pre_gelu_ = h;
  return proj_.forward(linear_ctx, g);
}

SimTensor SimMlp::backward(SimContext& ctx, SimTensor dy) {
  SimTensor dg = proj_.backward(ctx, dy);  // the GELU gradient is computed in place
  pre_gelu_ = SimTensor();
  return fc_.backward(ctx, dg);
}

SimTensor SimMlp::backward_with_input(SimContext& ctx, const SimTensor& dy, const SimTensor& x) {
  if (mode_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  SimTensor g = sim_activation(ctx, pre_gelu_.shape());
  SimTensor dg = sim_linear_backward_with_input(ctx, dy, g);
  g = SimTensor();
  pre_gelu_ = SimTensor();
  return sim_linear_backward_with_input(ctx, dg, x);
}

SimTransformerBlock::SimTransformerBlock(std::int64_t channels, std::int64_t heads, RecomputeMode mode)
    : mode_(mode), attn_(channels, heads, mode), mlp_(channels, mode) {}

void SimTransformerBlock::clear_saved() {
  ln_1_.clear_saved();
  attn_.clear_saved();
  ln_2_.clear_saved();
  mlp_.clear_saved();
}

SimTensor SimTransformerBlock::forward(SimContext& ctx, const SimTensor& x) {
  SimTensor x1 = sim_residual_add(ctx, x, attn_.forward(ctx, ln_1_.forward(ctx, x)));
  return sim_residual_add(ctx, x1, mlp_.forward(ctx, ln_2_.forward(ctx, x1)));
}

SimTensor SimTransformerBlock::backward(SimContext& ctx, SimTensor dy) {
  if (mode_ == RecomputeMode::kElementwise) return backward_recomputing(ctx, dy);
  SimTensor dx1 = ln_2_.backward(ctx, mlp_.backward(ctx, dy));
  SimTensor dx = ln_1_.backward(ctx, attn_.backward(ctx, dx1));
  return dx;
}

SimTensor SimTransformerBlock::backward_recomputing(SimContext& ctx, const SimTensor& dy) {
  SimTensor dx1 = ln_2_.backward(ctx, mlp_.backward_with_input(ctx, dy, ln_2_.recompute_output(ctx)));
  SimTensor dx = ln_1_.backward(ctx, attn_.backward_with_input(ctx, dx1, ln_1_.recompute_output(ctx)));
  return dx;
}

void SimCheckpointWrapper::clear_saved() {
  input_ = SimTensor();
  inner_->clear_saved();
}

SimTensor SimCheckpointWrapper::forward(SimContext& ctx, const SimTensor& x) {
  SimTensor y = inner_->forward(ctx, x);
  if (ctx.training) {
    inner_->clear_saved();
    input_ = x;
  }
  return y;
}

SimTensor SimCheckpointWrapper::backward(SimContext& ctx, SimTensor dy) {
  SimContext recompute = ctx;
  recompute.training = true;
  inner_->forward(recompute, input_);
  input_ = SimTensor();
  return inner_->backward(ctx, std::move(dy));
}

}  // namespace tessera
