// ShardedEngine: units, the gather/reduce schedule around each unit, and the sharded step.
#include "sharding/sharded_engine.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "runtime/kernels.hpp"
#include "runtime/modules/cross_entropy_loss.hpp"
#include "runtime/optim/grad_clip.hpp"
#include "sharding/sharded_unit_module.hpp"

namespace tessera {
namespace {

bool has_prefix(const std::string& name, const std::string& prefix) {
  return name == prefix || (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                            name[prefix.size()] == '.');
}

// Reduction-order-fixed sum of one double per rank: all-gathered as raw bytes, added in rank order.
double sum_over_ranks(Communicator& comm, double local) {
  std::vector<double> all(static_cast<std::size_t>(comm.size()));
  std::int32_t mine[2];
  std::memcpy(mine, &local, sizeof local);
  comm.all_gather(ConstSpan(mine, 2), Span(all.data(), 2 * all.size()), DType::kI32).wait();
  double total = 0.0;
  for (double x : all) total += x;
  return total;
}

}  // namespace

ShardedEngine::ShardedEngine(Module& model, Device& device, Communicator& world, const ShardingConfig& config,
                             std::uint64_t seed)
    : model_(model), device_(device), world_(world), config_(config) {
  config_.precision.validate();
  if (config_.prefetch_units < 0) throw std::invalid_argument("--prefetch must be >= 0");
  const int h = config_.hybrid_group;
  if (h < 0 || (h > 0 && world.size() % h != 0)) {
    throw std::invalid_argument("--hybrid-group " + std::to_string(h) + " must divide the number of ranks " +
                                std::to_string(world.size()) + " (ranks are grouped consecutively)");
  }
  shard_comm_ = &world_;
  if (config_.stage != ZeroStage::kStage0 && h > 0 && h < world.size()) {
    shard_comm_owned_ = world.split(world.rank() / h, world.rank());
    replicate_comm_ = world.split(world.rank() % h, world.rank());
    shard_comm_ = shard_comm_owned_.get();
  }
  for (Parameter* p : model.parameters()) {
    if (p->value.defined()) {
      throw std::invalid_argument("ShardedEngine: parameter '" + p->name +
                                  "' already has storage; build the model without materialize_parameters()");
    }
  }
  if (config_.uses_loss_scaling()) scaler_.emplace(config_.loss_scaler);
  build_units(model);
  for (auto& unit : units_) unit->initialize(seed);
  wrap_modules(model);
}

ShardedEngine::~ShardedEngine() {
  // Put the original modules back so the model stays usable (and no wrapper outlives the engine).
  for (const NamedModule& nm : model_.named_modules()) {
    for (const ModuleSlot& slot : nm.module->children()) {
      if (dynamic_cast<ShardedUnitModule*>(slot.module.get()) != nullptr) {
        nm.module->wrap_child(slot.name, [](std::unique_ptr<Module> wrapper) {
          return static_cast<ShardedUnitModule&>(*wrapper).release_inner();
        });
      }
    }
  }
}

void ShardedEngine::build_units(Module& model) {
  // Unit modules: the policy's choice, or the root's direct children.
  std::vector<std::string> unit_names;
  if (config_.unit_policy) {
    for (const NamedModule& nm : model.named_modules()) {
      if (!nm.name.empty() && config_.unit_policy(nm.name, *nm.module)) unit_names.push_back(nm.name);
    }
  } else {
    for (const ModuleSlot& slot : model.children()) unit_names.push_back(slot.name);
  }
  // Each parameter belongs to the innermost unit module containing it; the rest to the root unit.
  std::map<std::string, std::vector<NamedParameter>> by_unit;
  std::vector<NamedParameter> root_params;
  for (const NamedParameter& np : model.named_parameters()) {
    const std::string* owner = nullptr;
    for (const std::string& u : unit_names) {
      if (has_prefix(np.name, u) && (owner == nullptr || u.size() > owner->size())) owner = &u;
    }
    (owner ? by_unit[*owner] : root_params).push_back(np);
  }
  const int ranks = shard_comm_->size(), rank = shard_comm_->rank();
  for (const std::string& u : unit_names) {
    auto it = by_unit.find(u);
    if (it == by_unit.end()) continue;  // owns no parameter (e.g. a tied head)
    units_.push_back(std::make_unique<FlatParamUnit>(u, it->second, config_.stage, config_.precision, ranks, rank,
                                                     device_));
  }
  if (!root_params.empty()) {
    root_unit_ = static_cast<int>(units_.size());
    units_.push_back(std::make_unique<FlatParamUnit>("<root>", root_params, config_.stage, config_.precision, ranks,
                                                     rank, device_));
  }
}

void ShardedEngine::wrap_modules(Module& model) {
  std::map<const Parameter*, int> unit_of;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    for (const FlatEntry& e : units_[u]->entries()) unit_of[e.parameter] = u;
  }
  std::map<std::string, int> unit_by_name;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) unit_by_name[units_[u]->name()] = u;

  users_.assign(units_.size(), 0);
  for (const NamedModule& nm : model.named_modules()) {
    Module* parent = nm.module;
    for (const ModuleSlot& slot : parent->children()) {
      const std::string child_name = nm.name.empty() ? slot.name : nm.name + "." + slot.name;
      std::set<int> needed;
      if (auto it = unit_by_name.find(child_name); it != unit_by_name.end()) needed.insert(it->second);
      for (Parameter* p : slot.module->tied_parameters()) {
        auto it = unit_of.find(p);
        if (it == unit_of.end()) {
          throw std::invalid_argument("ShardedEngine: " + child_name + " uses a tied parameter '" + p->name +
                                      "' that is not part of the model");
        }
        needed.insert(it->second);
      }
      if (needed.empty()) continue;
      std::vector<int> units(needed.begin(), needed.end());
      for (int u : units) ++users_[u];
      module_names_[units].push_back(child_name);
      parent->wrap_child(slot.name, [&](std::unique_ptr<Module> inner) {
        return std::make_unique<ShardedUnitModule>(std::move(inner), *this, units);
      });
    }
  }
  if (root_unit_ >= 0) ++users_[root_unit_];
  pending_backward_ = users_;
}

void ShardedEngine::issue_gather(int unit) {
  gathers_.push_back({unit, units_[unit]->start_gather(*shard_comm_)});
}

void ShardedEngine::ensure_params(int unit) {
  FlatParamUnit& u = *units_[unit];
  if (u.params_ready()) return;
  if (!u.gather_in_flight()) issue_gather(unit);
  // Gathers complete in issue order: finish every gather up to and including this one.
  while (!gathers_.empty()) {
    PendingGather g = gathers_.front();
    gathers_.erase(gathers_.begin());
    g.work.wait();
    units_[g.unit]->finish_gather();
    if (g.unit == unit) break;
  }
}

void ShardedEngine::prefetch(std::vector<int>& order, std::size_t& cursor, int unit) {
  if (cursor < order.size() && order[cursor] == unit) {
    ++cursor;
  } else {
    return;  // the call order differs from the recorded one: no prefetch this time
  }
  if (config_.stage != ZeroStage::kStage3) return;
  const std::size_t limit = static_cast<std::size_t>(config_.prefetch_units);
  for (std::size_t i = cursor; i < order.size() && i < cursor + limit && gathers_.size() < limit; ++i) {
    FlatParamUnit& next = *units_[order[i]];
    if (!next.params_ready() && !next.gather_in_flight()) issue_gather(order[i]);
  }
}

Tensor ShardedEngine::forward(Context& ctx, const Tensor& x) {
  forward_cursor_ = 0;
  forward_calls_.clear();
  if (root_unit_ >= 0) ensure_params(root_unit_);
  Tensor y = model_.forward(ctx, x);
  recording_forward_ = false;
  return y;
}

void ShardedEngine::before_forward(const std::vector<int>& units) {
  for (int u : units) {
    if (recording_forward_) forward_order_.push_back(u);
    ensure_params(u);
    if (!recording_forward_) prefetch(forward_order_, forward_cursor_, u);
  }
}

void ShardedEngine::after_forward(const std::vector<int>& units) {
  const bool reshard = config_.stage != ZeroStage::kStage3 || config_.reshard_after_forward;
  if (reshard) {
    for (int u : units) {
      if (u != root_unit_) units_[u]->release_params();
    }
  }
  if (observer_) notify_unit_phase("forward", units, forward_calls_);
}

void ShardedEngine::notify_unit_phase(const char* pass, const std::vector<int>& units,
                                      std::map<std::vector<int>, int>& calls) {
  std::string module;
  auto it = module_names_.find(units);
  if (it != module_names_.end() && !it->second.empty()) {
    const auto& names = it->second;
    const std::size_t k = static_cast<std::size_t>(calls[units]++) % names.size();
    module = names[std::string(pass) == "forward" ? k : names.size() - 1 - k];  // backward runs in reverse
  } else {
    for (int u : units) {
      if (!module.empty()) module += "+";
      module += units_[u]->name();
    }
  }
  observer_(std::string(pass) + " " + module);
}

void ShardedEngine::backward(Context& ctx, Tensor dy, GradSync sync) {
  sync_ = sync;
  backward_cursor_ = 0;
  backward_calls_.clear();
  in_backward_ = true;
  if (root_unit_ >= 0) {
    ensure_params(root_unit_);
    units_[root_unit_]->prepare_grads();
  }
  model_.backward(ctx, std::move(dy));  // moved: the (B,T,V) loss gradient dies after the head's backward
  if (root_unit_ >= 0) after_backward({root_unit_});
  finish_all_reduces();
  in_backward_ = false;
  recording_backward_ = false;
}

void ShardedEngine::before_backward(const std::vector<int>& units) {
  for (int u : units) {
    if (recording_backward_) backward_order_.push_back(u);
    ensure_params(u);
    units_[u]->prepare_grads();
    if (!recording_backward_) prefetch(backward_order_, backward_cursor_, u);
  }
}

void ShardedEngine::after_backward(const std::vector<int>& units) {
  const bool reduce_now = sync_ == GradSync::kReduce || config_.stage == ZeroStage::kStage2 ||
                          config_.stage == ZeroStage::kStage3;
  for (int u : units) {
    if (--pending_backward_[u] > 0) continue;
    pending_backward_[u] = users_[u];
    units_[u]->release_params();
    if (!reduce_now) continue;
    reduces_.push_back({u, units_[u]->start_grad_reduce(*shard_comm_)});
    // Bound the transient gradient buffers: at most two units' reductions in flight.
    while (reduces_.size() > 2) finish_oldest_reduce();
  }
  if (observer_) notify_unit_phase("backward", units, backward_calls_);
}

void ShardedEngine::finish_oldest_reduce() {
  PendingReduce r = reduces_.front();
  reduces_.pop_front();
  r.work.wait();
  units_[r.unit]->finish_grad_reduce(replicate_comm_.get());
}

void ShardedEngine::finish_all_reduces() {
  while (!reduces_.empty()) finish_oldest_reduce();
}

void ShardedEngine::zero_grad() {
  for (auto& unit : units_) unit->zero_grads();
}

StepResult ShardedEngine::step(float lr) {
  finish_all_reduces();
  const Kernels& kernels = device_.kernels();
  double local = 0.0;
  for (auto& unit : units_) local += unit->grad_sum_squares(kernels);
  StepResult result;
  const float loss_scale = this->loss_scale();
  result.grad_norm = std::sqrt(sum_over_ranks(*shard_comm_, local)) / loss_scale;
  if (!std::isfinite(result.grad_norm)) {
    result.skipped = true;  // every rank computed the same norm, so every rank skips
    if (scaler_) scaler_->update(true);
    if (observer_) observer_("step");
    return result;
  }
  if (scaler_) scaler_->update(false);
  // One pass over the gradients: divide the loss scale out and clip.
  const float coefficient = clip_coefficient(result.grad_norm, config_.grad_clip) / loss_scale;
  ++step_count_;
  for (auto& unit : units_) {
    if (coefficient != 1.0f) unit->scale_grads(kernels, coefficient);
    unit->adamw_step(kernels, config_.adamw, step_count_, lr);
  }
  publish_parameters();
  if (observer_) observer_("step");
  return result;
}

void ShardedEngine::publish_parameters() {
  std::vector<Work> publishes;
  for (auto& unit : units_) publishes.push_back(unit->start_publish(*shard_comm_));
  wait_all(publishes);
}

StepResult ShardedEngine::train_step(const std::vector<MicroBatch>& micro_batches, float lr) {
  if (micro_batches.empty()) throw std::invalid_argument("ShardedEngine::train_step: no micro-batches");
  zero_grad();
  Context ctx(device_);
  const float scale = loss_scale() / static_cast<float>(micro_batches.size());
  double loss_sum = 0.0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    CrossEntropyLoss loss;
    Tensor logits = forward(ctx, micro_batches[i].inputs);
    loss_sum += loss.forward(ctx, logits, micro_batches[i].targets);
    if (observer_) observer_("loss");
    logits = Tensor();
    backward(ctx, loss.backward(ctx, scale), i + 1 == micro_batches.size() ? GradSync::kReduce : GradSync::kDefer);
  }
  StepResult result = step(lr);
  float mean_loss = static_cast<float>(loss_sum / static_cast<double>(micro_batches.size()));
  world_.all_reduce(Span(&mean_loss, 1), DType::kF32, ReduceOp::kAvg).wait();
  result.loss = mean_loss;
  return result;
}

}  // namespace tessera
