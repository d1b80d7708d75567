// ShardedEngine: units, the gather/reduce schedule around each unit, and the sharded step.
#include "tessera/sharding/sharded_engine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/model/optim/grad_clip.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/sharding/sharded_unit_module.hpp"
#include "tessera/sharding/staged_collectives.hpp"
#include "tessera/sharding/unit_partition.hpp"

namespace tessera {
namespace {

const ShardingConfig& validated(const ShardingConfig& config) {
  config.validate();
  return config;
}

// The stage's placement on `device`; an inference engine drops the gradients and the optimizer state.
Placement placement_for(const ShardingConfig& config, const Device& device) {
  Placement p = make_placement(config.stage, config.precision, config.offload, device.memory_is_host());
  p.gradients = p.optimizer_state = config.use == EngineUse::kTraining;
  return p;
}

}  // namespace

namespace {

ShardGroups with_tensor(ShardGroups groups, Communicator* tensor_parallel) {
  groups.tensor = tensor_parallel;
  return groups;
}

}  // namespace

ShardedEngine::ShardedEngine(Module& model, Device& device, Communicator& world, const ShardingConfig& config,
                             std::uint64_t seed, Communicator* tensor_parallel)
    : ShardedEngine(model, device, world,
                    with_tensor(make_shard_groups(world, validated(config).stage, config.hybrid_group, config.nodes),
                                tensor_parallel),
                    config, seed) {}

ShardedEngine::ShardedEngine(Module& model, Device& device, Communicator& world, ShardGroups groups,
                             const ShardingConfig& config, std::uint64_t seed)
    : model_(model),
      device_(device),
      world_(world),
      groups_(std::move(groups)),
      config_(validated(config)),
      placement_(placement_for(config_, device)) {
  if (groups_.shard == nullptr) throw std::invalid_argument("ShardedEngine: ShardGroups without a shard group");
  check_devices();
  if (config_.offload.uses_nvme()) {
    config_.offload.nvme.validate(optimizer_alignment(config_.optimizer));
    nvme_ = std::make_unique<NvmeStore>(device_, config_.offload.nvme, world_.rank());
  }
  for (Parameter* p : model.parameters()) {
    if (p->value.defined()) {
      throw std::invalid_argument("ShardedEngine: parameter '" + p->name +
                                  "' already has storage; build the model without materialize_parameters()");
    }
  }
  if (config_.uses_loss_scaling()) scaler_.emplace(config_.loss_scaler);
  in_flight_.configure(InFlightKind::kGather, 0,
                       [this](int u) { units_[static_cast<std::size_t>(u)]->finish_gather(); });
  // The reduce of the step's last backward also writes the unit's gradient sum of squares.
  in_flight_.configure(InFlightKind::kReduce, static_cast<std::size_t>(config_.max_reduces_in_flight), [this](int u) {
    const auto unit = static_cast<std::size_t>(u);
    units_[unit]->finish_grad_reduce(groups_.replicate, sync_ == GradSync::kReduce ? norm_slot(unit) : nullptr);
    // The step's gradients of this unit are final: the host's copy starts behind the rest of backward.
    if (sync_ == GradSync::kReduce) units_[unit]->start_grad_offload();
  });
  build_units(model, seed);
}

ShardedEngine::~ShardedEngine() {
  // Put the original modules back so the model stays usable (and no wrapper outlives the engine).
  unwrap_sharded_units(model_);
}

void ShardedEngine::check_devices() const {
  for (const Communicator* comm : {&world_, groups_.shard, groups_.replicate}) {
    if (comm == nullptr || comm->memory_space() == device_.memory_space()) continue;
    throw std::invalid_argument("communicator '" + comm->name() + "' (" + comm_backend_name(comm->backend()) +
                                ") works on " + memory_space_name(comm->memory_space()) + " memory but the device " +
                                device_.name() + " holds " + memory_space_name(device_.memory_space()) +
                                " memory: use a communicator for the device's memory (MPI for the CPU device)");
  }
}

void ShardedEngine::build_units(Module& model, std::uint64_t seed) {
  // The parameters kept in f32 (norms) are units of their own unless everything is f32 anyway.
  const MixedPrecision& precision = config_.precision;
  const bool f32_apart = precision.param_dtype != DType::kF32 || precision.compute_dtype != DType::kF32;
  const UnitPartition partition = partition_units(model, config_.unit_policy, f32_apart);
  ShardingConfig f32_config = config_;
  f32_config.precision.param_dtype = f32_config.precision.compute_dtype = DType::kF32;
  const Placement f32_placement = placement_for(f32_config, device_);
  Communicator& shard = *groups_.shard;
  const std::int64_t alignment = optimizer_alignment(config_.optimizer);
  for (const UnitParameters& u : partition.units) {
    units_.push_back(std::make_unique<FlatParamUnit>(
        u.name, FlatLayout(u.parameters, shard.size(), shard.rank(), alignment), u.f32 ? f32_placement : placement_,
        u.f32 ? f32_config.precision : precision, config_.optimizer, device_, nvme_.get()));
  }
  if (nvme_) nvme_->allocate_file();  // every unit has reserved its extents
  for (auto& unit : units_) unit->initialize(seed);
  root_use_ = {partition.root_units, "<root>"};
  // Under tensor parallelism the gradient norm counts the replicated parameters once over the group.
  if (groups_.tensor != nullptr && groups_.tensor->size() > 1) {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      for (const FlatEntry& e : units_[u]->layout().entries()) {
        if (!e.parameter->slice.split()) replicated_.push_back({u, FlatRange{e.offset, e.numel}});
      }
    }
  }
  users_ = wrap_unit_modules(model, partition, units_, *this);
  for (int u : root_use_.units) ++users_[static_cast<std::size_t>(u)];
  pending_backward_ = users_;
}

bool ShardedEngine::is_root(int unit) const {
  return std::find(root_use_.units.begin(), root_use_.units.end(), unit) != root_use_.units.end();
}

void ShardedEngine::issue_gather(int unit) {
  in_flight_.push(InFlightKind::kGather, unit, units_[static_cast<std::size_t>(unit)]->start_gather(*groups_.shard));
}

void ShardedEngine::ensure_params(int unit) {
  FlatParamUnit& u = *units_[static_cast<std::size_t>(unit)];
  if (u.params_ready()) return;
  if (!u.gather_in_flight()) issue_gather(unit);
  in_flight_.finish_through(InFlightKind::kGather, unit);  // gathers complete in issue order
}

void ShardedEngine::prefetch(std::vector<int>& order, std::size_t& cursor, int unit) {
  if (cursor >= order.size() || order[cursor] != unit) return;  // the call order differs from the recorded one
  ++cursor;
  if (!placement_.gather_for_compute) return;
  const std::size_t limit = static_cast<std::size_t>(config_.prefetch_units);
  for (std::size_t i = cursor;
       i < order.size() && i < cursor + limit && in_flight_.count(InFlightKind::kGather) < limit; ++i) {
    const FlatParamUnit& next = *units_[static_cast<std::size_t>(order[i])];
    if (!next.params_ready() && !next.gather_in_flight()) issue_gather(order[i]);
  }
}

void ShardedEngine::check_state_whole(const std::string& use) const {
  if (state_partial_.empty()) return;
  throw std::runtime_error(use + " refused: " + state_partial_);
}

template <class Call>
auto ShardedEngine::guarded(const char* pass, Call&& call) {
  // On for the length of the call, off again however it ends (the Parameters bound as before).
  struct Guard {
    ShardedEngine& engine;
    void set(bool on) {
      for (std::size_t u = 0; u < engine.units_.size(); ++u) {
        if (!engine.is_root(static_cast<int>(u))) engine.units_[u]->set_access_guard(on);
      }
    }
    ~Guard() { set(false); }
  } guard{*this};
  guard.set(true);
  try {
    return call();
  } catch (const MissingParameterStorage& missing) {
    const std::string message = bypass_message(missing, pass);  // while the guard is still on
    if (message.empty()) throw;
    throw HookBypassError(message);
  }
}

std::string ShardedEngine::bypass_message(const MissingParameterStorage& missing, const char* pass) const {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const FlatParamUnit& unit = *units_[u];
    for (const FlatEntry& e : unit.layout().entries()) {
      if (e.parameter != &missing.parameter()) continue;
      if (!unit.access_closed()) return "";
      // The module owning the parameter ("fc1" of "fc1.bias"), its type, and the wrapped modules
      // the unit is gathered around.
      const std::string local = "." + e.parameter->name;
      const std::string owner =
          e.name.size() > local.size() ? e.name.substr(0, e.name.size() - local.size()) : std::string();
      std::string type, users;
      for (const NamedModule& nm : model_.named_modules()) {
        if (const auto* wrapper = dynamic_cast<const ShardedUnitModule*>(nm.module)) {
          const std::vector<int>& needs = wrapper->use().units;
          if (std::find(needs.begin(), needs.end(), static_cast<int>(u)) != needs.end()) {
            users += (users.empty() ? "'" : ", '") + wrapper->use().module + "'";
          }
        } else if (nm.name == owner) {
          type = nm.module->type_name();
        }
      }
      return std::string("ShardedEngine::") + pass + ": module '" + owner + "'" +
             (type.empty() ? "" : " (" + type + ")") + " ran past its slot's hooks: it reached parameter '" + e.name +
             "' outside the hooks of " + users + ", the module(s) the engine gathers unit '" + unit.name() +
             "' around (ZeRO-" + std::to_string(zero_stage_number(config_.stage)) +
             "). Its parent called it other than through its slot: a Module* (or Linear*, ...) kept from before the "
             "engine wrapped the model, or a method of the child's own (such as Linear::forward_gelu) called on it. "
             "Past the hooks its parameters are not gathered (ZeRO-3) and its gradients are not reduced across ranks "
             "(the replicas would drift apart). Call the child through its slot, slot->forward(ctx, x) and "
             "slot->backward(ctx, dy), keeping the ModuleSlot& that register_child returned rather than a Module*; to "
             "call a method of the child's own, make the module that calls it the unit instead "
             "(ShardingConfig::unit_policy), so the child runs inside that unit's hooks";
    }
  }
  return "";
}

Tensor ShardedEngine::forward(Context& ctx, const Tensor& x) {
  check_state_whole("forward");
  forward_cursor_ = 0;
  for (int u : root_use_.units) ensure_params(u);
  Tensor y = guarded("forward", [&] { return model_.forward(ctx, x); });
  recording_forward_ = false;
  return y;
}

void ShardedEngine::before_forward(const UnitUse& use) {
  for (int u : use.units) {
    if (recording_forward_) forward_order_.push_back(u);
    ensure_params(u);
    units_[static_cast<std::size_t>(u)]->open_access();
    if (!recording_forward_) prefetch(forward_order_, forward_cursor_, u);
  }
}

void ShardedEngine::after_forward(const UnitUse& use) {
  for (int u : use.units) units_[static_cast<std::size_t>(u)]->close_access();
  if (!placement_.gather_for_compute || config_.reshard_after_forward) {
    for (int u : use.units) {
      if (!is_root(u)) units_[static_cast<std::size_t>(u)]->release_params();
    }
  }
  note_phase("forward " + use.module);
}

void ShardedEngine::check_trains(const char* use) const {
  if (config_.use == EngineUse::kTraining) return;
  throw std::logic_error(std::string("ShardedEngine::") + use +
                         ": this engine was built for inference (ShardingConfig::use): it keeps no gradients or "
                         "optimizer state");
}

void ShardedEngine::backward(Context& ctx, Tensor dy, GradSync sync) {
  check_trains("backward");
  sync_ = sync;
  backward_cursor_ = 0;
  for (int u : root_use_.units) {
    ensure_params(u);
    units_[static_cast<std::size_t>(u)]->prepare_grads();
  }
  // moved: the (B,T,V) loss gradient dies after the head's backward
  guarded("backward", [&] { model_.backward(ctx, std::move(dy)); });
  if (!root_use_.units.empty()) after_backward(root_use_);
  in_flight_.finish_all(InFlightKind::kReduce);
  recording_backward_ = false;
}

void ShardedEngine::before_backward(const UnitUse& use) {
  for (int u : use.units) {
    if (recording_backward_) backward_order_.push_back(u);
    ensure_params(u);
    units_[static_cast<std::size_t>(u)]->prepare_grads();
    units_[static_cast<std::size_t>(u)]->open_access();
    if (!recording_backward_) prefetch(backward_order_, backward_cursor_, u);
  }
}

void ShardedEngine::after_backward(const UnitUse& use) {
  const bool reduce_now = sync_ == GradSync::kReduce || placement_.reduce_every_micro_step;
  for (int u : use.units) {
    units_[static_cast<std::size_t>(u)]->close_access();
    auto& pending = pending_backward_[static_cast<std::size_t>(u)];
    if (--pending > 0) continue;
    pending = users_[static_cast<std::size_t>(u)];
    FlatParamUnit& unit = *units_[static_cast<std::size_t>(u)];
    unit.release_params();
    if (reduce_now) {
      in_flight_.push(InFlightKind::kReduce, u, unit.start_grad_reduce(*groups_.shard));
    } else {
      unit.accumulate_grads();  // a non-f32 micro-batch's gradients into the f32 accumulator
    }
  }
  note_phase("backward " + use.module);
}

void ShardedEngine::zero_grad() {
  norm_.reset();
  for (auto& unit : units_) unit->zero_grads();
}

double* ShardedEngine::norm_slot(std::size_t u) {
  if (!norm_slots_) {
    // Allocated on first use (the first step), not with the model state.
    // One per unit, then one per replicated parameter of a tensor-parallel model.
    norm_slots_ =
        Storage::allocate(device_, std::max<std::size_t>(units_.size() + replicated_.size(), 1) * sizeof(double),
                          MemoryCategory::kWorkspace);
  }
  auto* slots = static_cast<double*>(norm_slots_->data());
  return slots == nullptr ? nullptr : slots + u;
}

double ShardedEngine::gradient_norm() {
  check_trains("gradient_norm");
  if (norm_) return *norm_;
  in_flight_.finish_all(InFlightKind::kReduce);
  const Kernels& kernels = device_.kernels();
  // Each unit's shard sum of squares into its slot (kept there by the last reduce at stages 2-3),
  // one copy to the host, summed in unit order.
  const std::size_t n = units_.size();
  std::vector<double> parts(n, 0.0);
  for (std::size_t u = 0; u < n; ++u) units_[u]->grad_sum_squares(kernels, norm_slot(u));
  if (n > 0) device_.copy_to_host(parts.data(), norm_slot(0), n * sizeof(double));
  double local = 0.0;
  for (double part : parts) local += part;
  double total = sum_in_rank_order(device_, *groups_.shard, local);
  if (groups_.tensor != nullptr && groups_.tensor->size() > 1) {
    // Every rank of the tensor-parallel group holds the replicated parameters whole: rank 0 counts them.
    const double replicated = sum_in_rank_order(device_, *groups_.shard, replicated_sum_squares());
    total = sum_in_rank_order(device_, *groups_.tensor, groups_.tensor->rank() == 0 ? total : total - replicated);
  }
  norm_ = std::sqrt(total) / loss_scale();
  return *norm_;
}

double ShardedEngine::replicated_sum_squares() {
  if (replicated_.empty() || !device_.holds_data()) return 0.0;
  const std::size_t first = units_.size();  // the replicated parameters' slots follow the units'
  for (std::size_t i = 0; i < replicated_.size(); ++i) {
    units_[replicated_[i].first]->grad_sum_squares(device_.kernels(), replicated_[i].second, norm_slot(first + i));
  }
  std::vector<double> host(replicated_.size(), 0.0);
  device_.copy_to_host(host.data(), norm_slot(first), replicated_.size() * sizeof(double));
  double sum = 0.0;
  for (double part : host) sum += part;
  return sum;
}

OptimizerStepResult ShardedEngine::step(float lr) {
  check_trains("step");
  check_state_whole("step");
  OptimizerStepResult result;
  result.grad_norm = gradient_norm();
  norm_.reset();
  const float loss_scale = this->loss_scale();
  if (!std::isfinite(result.grad_norm)) {
    result.skipped = true;  // every rank computed the same norm, so every rank skips
    if (scaler_) scaler_->update(true);
    note_phase("step");
    return result;
  }
  if (scaler_) scaler_->update(false);
  // The loss-scale division and the clip, applied to the gradients inside the update.
  const Kernels& kernels = device_.kernels();
  const float coefficient = clip_coefficient(result.grad_norm, config_.grad_clip) / loss_scale;
  ++step_count_;
  for (auto& unit : units_) unit->start_grad_offload();  // all queued before the host waits for the first
  for (auto& unit : units_) unit->optimizer_step(kernels, lr, step_count_, coefficient);
  publish_parameters();
  note_phase("step");
  return result;
}

OptimizerStepResult ShardedEngine::skip_step() {
  OptimizerStepResult result;
  result.grad_norm = gradient_norm();
  norm_.reset();
  result.skipped = true;
  note_phase("step");
  return result;
}

void ShardedEngine::publish_parameters() {
  std::vector<Work> publishes;
  for (auto& unit : units_) publishes.push_back(unit->start_publish(*groups_.shard));
  wait_all(publishes);
}

HostUpdateStats ShardedEngine::host_update_stats() const {
  HostUpdateStats total;
  for (const auto& unit : units_) total += unit->host_update_stats();
  return total;
}

void ShardedEngine::reset_host_update_stats() {
  for (auto& unit : units_) unit->reset_host_update_stats();
}

std::vector<StateSpec> ShardedEngine::state_specs() const {
  std::vector<StateSpec> specs{{"master", DType::kF32}};
  if (!placement_.optimizer_state) return specs;
  for (const StateSpec& s : optimizer_state_specs(config_.optimizer)) specs.push_back(s);
  return specs;
}

void ShardedEngine::reset_optimizer_state() {
  for (auto& unit : units_) unit->reset_optimizer();
}

}  // namespace tessera
