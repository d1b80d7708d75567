// SimEngine: ShardedEngine's unit schedule and train_step over the GPT shadow.
#include "planning/sim_engine.hpp"

#include <stdexcept>

#include "planning/model_spec.hpp"
#include "planning/sim_block.hpp"
#include "planning/sim_layers.hpp"

namespace tessera {

// ShardedUnitModule's shadow: engine hooks around the wrapped module.
class SimEngine::UnitModule final : public SimModule {
 public:
  UnitModule(std::unique_ptr<SimModule> inner, SimEngine& engine, std::vector<int> units, std::string name)
      : inner_(std::move(inner)), engine_(engine), units_(std::move(units)), name_(std::move(name)) {}

  SimTensor forward(SimContext& ctx, const SimTensor& x) override {
    engine_.before_forward(units_);
    SimTensor y = inner_->forward(ctx, x);
    engine_.after_forward(units_, name_);
    return y;
  }
  SimTensor backward(SimContext& ctx, SimTensor dy) override {
    engine_.before_backward(units_);
    SimTensor dx = inner_->backward(ctx, std::move(dy));
    engine_.after_backward(units_, name_);
    return dx;
  }
  void clear_saved() override { inner_->clear_saved(); }

 private:
  std::unique_ptr<SimModule> inner_;
  SimEngine& engine_;
  std::vector<int> units_;
  std::string name_;
};

namespace {

// Which blocks apply_activation_checkpointing wraps (blocks, every:K) or switches (selective).
bool block_selected(const CheckpointPolicy& policy, std::int64_t block) {
  const bool by_type = policy.kind == CheckpointPolicyKind::kByType || policy.kind == CheckpointPolicyKind::kEveryKth;
  if (by_type && policy.type_name != "TransformerBlock") {
    throw std::invalid_argument("the memory planner models checkpointing of TransformerBlocks only, not of " +
                                policy.type_name);
  }
  switch (policy.kind) {
    case CheckpointPolicyKind::kNone: return false;
    case CheckpointPolicyKind::kByType: return true;
    case CheckpointPolicyKind::kEveryKth: return block % policy.every == 0;
    case CheckpointPolicyKind::kSelective: return true;
    case CheckpointPolicyKind::kByName: break;
  }
  throw std::invalid_argument("the memory planner models the checkpointing policies none, blocks, every:K and "
                              "selective; by-name selections are not modelled");
}

}  // namespace

SimEngine::SimEngine(const SimEngineConfig& config, MemoryTracker& device, MemoryTracker& offloaded)
    : config_(config), device_(device) {
  const GptConfig& m = config_.model;
  m.validate();
  for (const UnitSize& u : gpt_unit_sizes(m)) {
    units_.push_back(std::make_unique<SimFlatUnit>(u.name, u.numel, config_.stage, config_.precision,
                                                   config_.grad_dtype, config_.shard_ranks, device, offloaded,
                                                   config_.placement));
  }

  const int ln_f = static_cast<int>(m.layers) + 1;
  modules_.push_back(std::make_unique<UnitModule>(std::make_unique<SimEmbedding>(m.channels), *this,
                                                  std::vector<int>{0}, "embed"));
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const bool selected = block_selected(config_.checkpointing, l);
    const bool selective = config_.checkpointing.kind == CheckpointPolicyKind::kSelective;
    std::unique_ptr<SimModule> block = std::make_unique<SimTransformerBlock>(
        m.channels, m.heads, selective ? RecomputeMode::kElementwise : RecomputeMode::kKeepAll);
    if (selected && !selective) block = std::make_unique<SimCheckpointWrapper>(std::move(block));
    modules_.push_back(std::make_unique<UnitModule>(std::move(block), *this, std::vector<int>{static_cast<int>(l) + 1},
                                                    "h." + std::to_string(l)));
  }
  modules_.push_back(std::make_unique<UnitModule>(std::make_unique<SimLayerNorm>(), *this,
                                                  std::vector<int>{ln_f}, "ln_f"));
  modules_.push_back(std::make_unique<UnitModule>(std::make_unique<SimLmHead>(m.vocab_size), *this,
                                                  std::vector<int>{0}, "head"));
  users_.assign(units_.size(), 1);
  users_[0] = 2;  // embed and the tied head
  pending_backward_ = users_;
}

SimEngine::~SimEngine() = default;

void SimEngine::notify(const std::string& phase) {
  if (observer_) observer_(phase);
}

void SimEngine::ensure_params(int unit) {
  SimFlatUnit& u = *units_[unit];
  if (u.params_ready()) return;
  if (!u.gather_in_flight()) {
    u.start_gather();
    gathers_.push_back(unit);
  }
  while (!gathers_.empty()) {
    const int g = gathers_.front();
    gathers_.erase(gathers_.begin());
    units_[g]->finish_gather();
    if (g == unit) break;
  }
}

void SimEngine::prefetch(std::vector<int>& order, std::size_t& cursor, int unit) {
  if (cursor < order.size() && order[cursor] == unit) {
    ++cursor;
  } else {
    return;
  }
  if (config_.stage != ZeroStage::kStage3) return;
  const std::size_t limit = static_cast<std::size_t>(config_.prefetch_units);
  for (std::size_t i = cursor; i < order.size() && i < cursor + limit && gathers_.size() < limit; ++i) {
    SimFlatUnit& next = *units_[order[i]];
    if (!next.params_ready() && !next.gather_in_flight()) {
      next.start_gather();
      gathers_.push_back(order[i]);
    }
  }
}

void SimEngine::before_forward(const std::vector<int>& units) {
  for (int u : units) {
    if (recording_forward_) forward_order_.push_back(u);
    ensure_params(u);
    if (!recording_forward_) prefetch(forward_order_, forward_cursor_, u);
  }
}

void SimEngine::after_forward(const std::vector<int>& units, const std::string& module) {
  const bool reshard = config_.stage != ZeroStage::kStage3 || config_.reshard_after_forward;
  if (reshard) {
    for (int u : units) units_[u]->release_params();
  }
  notify("forward " + module);
}

void SimEngine::before_backward(const std::vector<int>& units) {
  for (int u : units) {
    if (recording_backward_) backward_order_.push_back(u);
    ensure_params(u);
    units_[u]->prepare_grads();
    if (!recording_backward_) prefetch(backward_order_, backward_cursor_, u);
  }
}

void SimEngine::after_backward(const std::vector<int>& units, const std::string& module) {
  const bool reduce_now = sync_ == GradSync::kReduce || config_.stage == ZeroStage::kStage2 ||
                          config_.stage == ZeroStage::kStage3;
  for (int u : units) {
    if (--pending_backward_[u] > 0) continue;
    pending_backward_[u] = users_[u];
    units_[u]->release_params();
    if (!reduce_now) continue;
    units_[u]->start_grad_reduce();
    reduces_.push_back(u);
    while (reduces_.size() > 2) finish_oldest_reduce();
  }
  notify("backward " + module);
}

void SimEngine::finish_oldest_reduce() {
  const int u = reduces_.front();
  reduces_.pop_front();
  units_[u]->finish_grad_reduce();
}

void SimEngine::finish_all_reduces() {
  while (!reduces_.empty()) finish_oldest_reduce();
}

SimTensor SimEngine::forward(SimContext& ctx, const SimTensor& tokens) {
  forward_cursor_ = 0;
  SimTensor x = tokens;
  for (auto& module : modules_) x = module->forward(ctx, x);
  recording_forward_ = false;
  return x;
}

void SimEngine::backward(SimContext& ctx, SimTensor dlogits, GradSync sync) {
  sync_ = sync;
  backward_cursor_ = 0;
  SimTensor d = std::move(dlogits);
  for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) d = (*it)->backward(ctx, std::move(d));
  finish_all_reduces();
  recording_backward_ = false;
}

void SimEngine::step() {
  finish_all_reduces();
  notify("step");
}

void SimEngine::train_step(const std::vector<SimTensor>& inputs, const std::vector<SimTensor>& targets) {
  SimContext ctx(device_);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SimCrossEntropyLoss loss;
    SimTensor logits = forward(ctx, inputs[i]);
    loss.forward(ctx, logits, targets[i]);
    notify("loss");
    logits = SimTensor();
    backward(ctx, loss.backward(ctx), i + 1 == inputs.size() ? GradSync::kReduce : GradSync::kDefer);
  }
  step();
}

}  // namespace tessera
