// ShardedEngine: trains a Module data-parallel across the ranks of a Communicator with ZeRO
// stages 0-3 over FSDP-style units.
//
// Construction cuts the model into units (ShardingConfig::unit_policy, unit_partition.hpp), lays
// each unit's parameters into a FlatParamUnit placed by the stage's Placement, and wraps the unit
// modules (and modules with tied weights) in ShardedUnitModules that call this engine's UnitHooks:
// gather parameters (prefetching the next unit), release them, and reduce a unit's gradients as
// soon as every module using it ran its backward — while earlier units' backward still computes.
// Parameter names do not change.
//
// One step, as the engine runs it:
//   forward   per unit: finish its gather (issued ahead by the prefetch), run, release
//   backward  per unit: gather again, run, start its gradient collective; at most
//             max_reduces_in_flight collectives are in flight, the oldest finished first
//   step      gradient norm from every unit's shard (written to device memory, summed in unit
//             order, then across ranks in rank order), skip on non-finite, the optimizer unit by
//             unit with the clipping factor and the loss-scale division applied inside the
//             update, publish the updated parameters
// Passes over the gradients: at stages 2-3 the last micro-step's accumulation into the shard also
// yields the shard's sum of squares (Kernels::add_sum_squares), so the norm reads nothing again;
// no stage scales the gradients in a pass of its own.
// Driving it: Trainer (training/trainer.hpp) runs forward, loss, backward and step over the
// micro-batches of one optimizer step; embedding programs may call forward/backward/step directly.
//
// Every rank must construct the engine and call forward/backward/step in the same order with
// batches of the same shape (collectives are matched by order).
//
// Hooks cannot be skipped. A module whose parent calls it other than through its slot (a `Linear*`
// kept from before the engine wrapped the model, a method of its own such as forward_gelu) would run
// past its ShardedUnitModule: at stage 3 its parameters would not be gathered, and at every stage its
// gradients would not be reduced across ranks, so the replicas would drift apart without a word. So
// for the length of forward() and backward() every unit's Parameters are unbound (the access guard,
// FlatParamUnit::set_access_guard) except between the hooks of a module that uses the unit, at every
// stage: a module reached past its slot finds its first parameter unbound (require_value or
// require_grad throws MissingParameterStorage), and the engine turns that into a HookBypassError
// naming the module, the parameter and what to do instead — on the first forward, whatever the
// stage. Between the engine's calls the Parameters stay bound as the stage keeps them (stages 0-2:
// the stored parameters), for sampling, exports and tests. The guard costs a view per parameter per
// hook; the buffers are not touched. Parameters of the root unit (under no unit module) stay bound
// for the whole call: the root itself uses them.
//
// Determinism: with accumulation 1, stages 0-3 give bit-identical results at the same rank count
// for any Module (the communicator sums in rank order; the gradient norm is summed per shard in
// rank order at every stage). With accumulation, stages 0-1 add the micro-batches' gradients on each
// rank before reducing and stages 2-3 reduce each micro-batch before adding: 0 and 1 are
// bit-identical, 2 and 3 are, and the two pairs agree to f32 round-off (the same sums in another
// order; tests/sharding/custom_model_identity_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/communicator.hpp"
#include "tessera/model/module.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/sharding/flat_param_unit.hpp"
#include "tessera/sharding/host_update_stats.hpp"
#include "tessera/sharding/in_flight_queue.hpp"
#include "tessera/sharding/optimizer_step_result.hpp"
#include "tessera/sharding/shard_groups.hpp"
#include "tessera/sharding/sharding_config.hpp"
#include "tessera/sharding/unit_hooks.hpp"

namespace tessera {

// A module was run past its slot's hooks (the engine's message says which and what to do instead).
class HookBypassError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// When gradients are reduced across ranks. Stages 0-1 reduce once per step (kReduce on the last
// micro-batch, kDefer before it, as DDP's no_sync); stages 2-3 reduce every micro-batch regardless.
enum class GradSync { kDefer, kReduce };

class ShardedEngine : private UnitHooks {
 public:
  // `model`'s parameters must not be materialised yet; the engine gives them storage and initial
  // values for `seed`. `world` and `device` must outlive the engine; `world` must work on the
  // device's memory space (an MPI communicator with the CPU device).
  // `tensor_parallel`: the model is split over that group (ShardGroups::tensor), `world` is then the
  // data-parallel group of this rank's pieces.
  ShardedEngine(Module& model, Device& device, Communicator& world, const ShardingConfig& config, std::uint64_t seed,
                Communicator* tensor_parallel = nullptr);
  // With groups built by the caller (their communicators must outlive the engine unless owned).
  ShardedEngine(Module& model, Device& device, Communicator& world, ShardGroups groups, const ShardingConfig& config,
                std::uint64_t seed);
  ~ShardedEngine() override;  // puts the original modules back

  // tokens/inputs -> outputs, gathering units as they run.
  Tensor forward(Context& ctx, const Tensor& x);
  // Backward from d(loss)/d(outputs); reduces gradients per unit according to `sync`.
  void backward(Context& ctx, Tensor dy, GradSync sync);
  // Global-norm clip, skip on non-finite gradients (all ranks agree), the optimizer on every unit,
  // publish the updated parameters. Returns the (unscaled) norm before clipping.
  OptimizerStepResult step(float lr);
  // The halves of step() for a driver that decides in between (a spike guard): the global gradient
  // norm (collective; computed once per step), then step() or skip_step(), which takes no update
  // (the gradients are dropped by the next zero_grad) and leaves the loss scale alone.
  double gradient_norm();
  OptimizerStepResult skip_step();
  void zero_grad();
  // What to multiply the loss gradient by before backward: the dynamic loss scale, or 1.
  float loss_scale() const { return scaler_ ? scaler_->scale() : 1.0f; }
  DynamicLossScaler* loss_scaler() { return scaler_ ? &*scaler_ : nullptr; }

  const ShardingConfig& config() const { return config_; }
  Module& model() { return model_; }  // the model the engine trains (its units wrapped in place)
  const Placement& placement() const { return placement_; }
  Device& device() { return device_; }
  const Device& device() const { return device_; }
  Communicator& world() { return world_; }
  Communicator& shard_group() { return *groups_.shard; }
  Communicator* replicate_group() { return groups_.replicate; }
  Communicator* tensor_parallel_group() { return groups_.tensor; }
  const std::vector<std::unique_ptr<FlatParamUnit>>& units() const { return units_; }
  // The NVMe store of offloaded state, or null when nothing is offloaded to NVMe.
  NvmeStore* nvme_store() { return nvme_.get(); }
  const NvmeStore* nvme_store() const { return nvme_.get(); }
  // What the host's updates of offloaded state cost since the last reset (all zero unless
  // Placement::update_on_host).
  HostUpdateStats host_update_stats() const;
  void reset_host_update_stats();

  // --- state, for checkpoints: per unit, "master" (f32) then the optimizer's named tensors, each
  // over the unit's optimizer range (FlatParamUnit::state, read_state, write_state). Restoring:
  // write them, set the step counter (and the loss scaler), then publish_parameters() so the stored
  // parameters follow the master.
  std::vector<StateSpec> state_specs() const;
  std::vector<StateTensor> unit_state(int unit) const { return units_[static_cast<std::size_t>(unit)]->state(); }
  void reset_optimizer_state();  // a fresh optimizer (fine-tuning from exported weights)
  std::int64_t optimizer_steps() const { return step_count_; }
  void set_optimizer_steps(std::int64_t steps) { step_count_ = steps; }
  void publish_parameters();
  // A checkpoint load that wrote into the state and was then refused marks it partly overwritten:
  // until a load completes (mark_state_whole), forward, step and checkpoint saves throw
  // std::runtime_error with `reason`, so a mix of two states is never trained on or saved.
  void mark_state_partial(std::string reason) { state_partial_ = std::move(reason); }
  void mark_state_whole() { state_partial_.clear(); }
  // Throws the mark's reason, naming `use` ("forward", "step", "a checkpoint save"), when marked.
  void check_state_whole(const std::string& use) const;
  // Throws std::logic_error naming `use` on an inference engine (EngineUse::kInference).
  void check_trains(const char* use) const;

  // Memory profiling: `observer` hears a phase name at the end of every wrapped module's forward
  // ("forward h.3") and backward ("backward head"), at the end of step() ("step"), and whatever a
  // driver reports through note_phase() (the Trainer's "loss"). Empty (the default) turns it off.
  using PhaseObserver = std::function<void(const std::string& phase)>;
  void set_phase_observer(PhaseObserver observer) { observer_ = std::move(observer); }
  void note_phase(const std::string& phase) {
    if (observer_) observer_(phase);
  }

 private:
  // UnitHooks, called by the wrapped modules.
  void before_forward(const UnitUse& use) override;
  void after_forward(const UnitUse& use) override;
  void before_backward(const UnitUse& use) override;
  void after_backward(const UnitUse& use) override;

  void check_devices() const;
  // Runs `call` (the model's forward or backward) with every unit but the root behind its access
  // guard; a MissingParameterStorage for a parameter of a closed unit becomes a HookBypassError.
  template <class Call>
  auto guarded(const char* pass, Call&& call);
  // The HookBypassError text for `missing` when its parameter belongs to a unit whose access is
  // closed ("" when it does not: the error is not the engine's to explain).
  std::string bypass_message(const MissingParameterStorage& missing, const char* pass) const;
  void build_units(Module& model, std::uint64_t seed);
  bool is_root(int unit) const;
  void ensure_params(int unit);
  void issue_gather(int unit);
  void prefetch(std::vector<int>& order, std::size_t& cursor, int unit);
  // The sum of squares of the gradients of the parameters not split over the tensor-parallel group,
  // over this rank's shards (summed over the shard group by the caller).
  double replicated_sum_squares();
  // Slot u of norm_slots_: unit u's, then the replicated parameters' (null on a device without data).
  double* norm_slot(std::size_t u);

  Module& model_;
  Device& device_;
  Communicator& world_;
  ShardGroups groups_;
  ShardingConfig config_;
  Placement placement_;
  std::unique_ptr<NvmeStore> nvme_;  // NVMe offload: this rank's file (outlives the units)

  std::vector<std::unique_ptr<FlatParamUnit>> units_;
  UnitUse root_use_;                   // the units of parameters under no unit module (none, or "<root>" and its f32 unit)
  std::vector<int> users_;             // per unit: wrapped modules whose backward touches it
  std::vector<int> pending_backward_;  // per unit: users whose backward has not run this micro-step
  InFlightQueue in_flight_;
  GradSync sync_ = GradSync::kReduce;

  // Unit order seen in the first forward/backward, for prefetching; cursors advance per call.
  std::vector<int> forward_order_, backward_order_;
  bool recording_forward_ = true, recording_backward_ = true;
  std::string state_partial_;  // "" unless a refused checkpoint load overwrote part of the state
  std::size_t forward_cursor_ = 0, backward_cursor_ = 0;

  std::int64_t step_count_ = 0;
  std::optional<double> norm_;  // this step's gradient norm, once computed
  // One double per unit in device memory (workspace, from the first step on): the units' shard
  // sums of squares, written by the last reduce (stages 2-3) or by gradient_norm(), copied to the
  // host once. The slots never move, so a unit's record of where it kept its sum stays valid.
  std::shared_ptr<Storage> norm_slots_;
  // Tensor parallel: the (unit, range) of every parameter not split over the group, whose squares
  // the gradient norm takes once over the group (replicated_sum_squares).
  std::vector<std::pair<std::size_t, FlatRange>> replicated_;
  std::optional<DynamicLossScaler> scaler_;
  PhaseObserver observer_;
};

}  // namespace tessera
