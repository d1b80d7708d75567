// ShardedEngine: trains a Module data-parallel across the ranks of a Communicator with ZeRO
// stages 0-3 over FSDP-style units.
//
// Construction cuts the model into units (ShardingConfig::unit_policy), lays each unit's parameters
// out in a FlatParamUnit, wraps the unit modules (and modules with tied weights) so that their
// forward/backward gather parameters, prefetch the next unit, and reduce gradients as soon as a unit's
// backward is done — while earlier units' backward still computes. Parameter names do not change.
//
// Every rank must construct the engine and call forward/backward/step in the same order with
// batches of the same shape (collectives are matched by order). Units' gathers and reductions are
// issued in the same order on every rank.
//
// Determinism: with accumulation 1, stages 0-3 give bit-identical results at the same rank count
// (the communicator sums in rank order; the gradient norm is summed per shard in rank order at
// every stage).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"
#include "runtime/local_trainer.hpp"
#include "runtime/module.hpp"
#include "sharding/flat_param_unit.hpp"
#include "sharding/sharding_config.hpp"

namespace tessera {

// When gradients are reduced across ranks. Stages 0-1 reduce once per step (kReduce on the last
// micro-batch, kDefer before it, as DDP's no_sync); stages 2-3 reduce every micro-batch regardless.
enum class GradSync { kDefer, kReduce };

class ShardedEngine {
 public:
  // `model`'s parameters must not be materialised yet; the engine gives them storage and initial
  // values for `seed`. `world` and `device` must outlive the engine.
  ShardedEngine(Module& model, Device& device, Communicator& world, const ShardingConfig& config,
                std::uint64_t seed);
  ~ShardedEngine();

  // tokens/inputs -> outputs, gathering units as they run.
  Tensor forward(Context& ctx, const Tensor& x);
  // Backward from d(loss)/d(outputs); reduces gradients per unit according to `sync`.
  void backward(Context& ctx, Tensor dy, GradSync sync);
  // Global-norm clip, skip on non-finite gradients (all ranks agree), AdamW on the shards, publish
  // the updated parameters. Returns the (unscaled) norm before clipping.
  StepResult step(float lr);
  // What to multiply the loss gradient by before backward: the dynamic loss scale, or 1.
  float loss_scale() const { return scaler_ ? scaler_->scale() : 1.0f; }
  DynamicLossScaler* loss_scaler() { return scaler_ ? &*scaler_ : nullptr; }
  void zero_grad();

  // One optimizer step over this rank's micro-batches: forward, cross-entropy (scaled by
  // 1/accumulation), backward, step. The returned loss is averaged over all ranks.
  StepResult train_step(const std::vector<MicroBatch>& micro_batches, float lr);

  const ShardingConfig& config() const { return config_; }
  Communicator& world() { return world_; }
  Communicator& shard_group() { return *shard_comm_; }
  Communicator* replicate_group() { return replicate_comm_.get(); }
  const std::vector<std::unique_ptr<FlatParamUnit>>& units() const { return units_; }
  std::int64_t optimizer_steps() const { return step_count_; }
  // Restoring state (checkpoints): set the step counter, write each unit's master()/exp_avg()/
  // exp_avg_sq() tensors, then publish_parameters() so the stored parameters follow the master.
  void set_optimizer_steps(std::int64_t steps) { step_count_ = steps; }
  void publish_parameters();

  // Memory profiling: `observer` is called with a phase name at the end of every unit module's
  // forward ("forward h.3") and backward ("backward h.3") — named after the module, so the tied
  // head reads "forward head" — after the loss in train_step ("loss") and at the end of step()
  // ("step"). An empty observer (the default) turns it off.
  using PhaseObserver = std::function<void(const std::string& phase)>;
  void set_phase_observer(PhaseObserver observer) { observer_ = std::move(observer); }

  // Called by the unit wrappers around their module's forward and backward.
  void before_forward(const std::vector<int>& units);
  void after_forward(const std::vector<int>& units);
  void before_backward(const std::vector<int>& units);
  void after_backward(const std::vector<int>& units);

 private:
  struct PendingGather {
    int unit;
    Work work;
  };
  struct PendingReduce {
    int unit;
    Work work;
  };

  void build_units(Module& model);
  void wrap_modules(Module& model);
  void ensure_params(int unit);
  void issue_gather(int unit);
  void prefetch(std::vector<int>& order, std::size_t& cursor, int unit);
  void finish_oldest_reduce();
  void finish_all_reduces();
  // Calls the observer with "<pass> <module>", the module found from the wrapped module names of
  // `units` (several modules sharing units, like embed and head, are told apart by call order).
  void notify_unit_phase(const char* pass, const std::vector<int>& units, std::map<std::vector<int>, int>& calls);

  Module& model_;
  Device& device_;
  Communicator& world_;
  ShardingConfig config_;
  std::unique_ptr<Communicator> shard_comm_owned_, replicate_comm_;
  Communicator* shard_comm_ = nullptr;

  std::vector<std::unique_ptr<FlatParamUnit>> units_;
  int root_unit_ = -1;                 // parameters under no unit module, or -1
  std::vector<int> users_;             // per unit: wrapped modules whose backward touches it
  std::vector<int> pending_backward_;  // per unit: users whose backward has not run this micro-step
  std::vector<PendingGather> gathers_;
  std::deque<PendingReduce> reduces_;
  GradSync sync_ = GradSync::kReduce;
  bool in_backward_ = false;

  // Unit order seen in the first forward/backward, for prefetching; cursors advance per call.
  std::vector<int> forward_order_, backward_order_;
  bool recording_forward_ = true, recording_backward_ = true;
  std::size_t forward_cursor_ = 0, backward_cursor_ = 0;

  std::int64_t step_count_ = 0;
  std::optional<DynamicLossScaler> scaler_;

  PhaseObserver observer_;
  std::map<std::vector<int>, std::vector<std::string>> module_names_;  // unit set -> wrapped modules, in order
  std::map<std::vector<int>, int> forward_calls_, backward_calls_;      // per pass, per unit set
};

}  // namespace tessera
