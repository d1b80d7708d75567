// FlatParamUnit: the buffers of one sharding unit and what happens to them in a step — the
// gathers that make its parameters ready for compute, the gradient collectives, the optimizer step
// over its optimizer range and the publishing of the updated parameters. What it stores where is
// not decided here: the FlatLayout says where each parameter sits, the Placement (the ZeRO table
// as data) which buffers exist, how large and in which memory, and the OptimizerState keeps the
// optimizer's own tensors.
//
// Buffers (P = padded_numel, S = shard_numel, "range" = the optimizer range, P or S):
//   stored_      (P or S) param dtype   kParameters      the parameters as stored between steps
//   compute_     (P) f32                                 what the Parameters view while the unit
//                                                        runs: stored_ itself (f32, full), or a
//                                                        transient copy (kCommBuffers)
//   gathered_    (P) param dtype        kCommBuffers     stage 3, while a gather is in flight
//   master_      (range) f32            kOptimizerState  a view of stored_ when master_is_params
//   grad_full_   (P) f32                kGradients       where backward accumulates
//   grad_shard_  (S) f32                kGradients       the accumulated reduced shard (stages 2-3)
//   wire_        (P) reduce dtype       kCommBuffers     staging of a non-f32 gradient collective
// Padding is zero and never updated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "runtime/optim/optimizer_state.hpp"
#include "sharding/flat_layout.hpp"
#include "sharding/placement.hpp"

namespace tessera {

class FlatParamUnit {
 public:
  FlatParamUnit(std::string name, FlatLayout layout, const Placement& placement, const MixedPrecision& precision,
                const OptimizerConfig& optimizer, Device& device);
  ~FlatParamUnit();  // unbinds the Parameters' values and grads
  FlatParamUnit(const FlatParamUnit&) = delete;
  FlatParamUnit& operator=(const FlatParamUnit&) = delete;

  const std::string& name() const { return name_; }
  const FlatLayout& layout() const { return layout_; }
  // The range the optimizer updates on this rank: the whole buffer at stage 0, the shard otherwise.
  FlatRange optimizer_range() const;

  // Fills the master and stored parameters with the initial values for `seed` (the values
  // materialize_parameters gives) and resets the optimizer. Nothing to do on a device without data.
  void initialize(std::uint64_t seed);

  // --- parameters for compute
  bool params_ready() const { return ready_; }
  bool gather_in_flight() const { return gather_in_flight_; }
  // Starts making the compute copy: a gather of the shards (stage 3), otherwise nothing to send.
  Work start_gather(Communicator& shard_comm);
  // After the gather's Work completed: widens to f32 when needed and binds every Parameter's value.
  void finish_gather();
  // Frees a transient compute copy and unbinds the values (nothing when the copy is persistent).
  void release_params();

  // --- gradients
  // Binds every Parameter's grad into the full f32 gradient buffer (allocated zeroed when transient).
  void prepare_grads();
  // Starts this unit's gradient collective (all-reduce or reduce-scatter, averaging).
  Work start_grad_reduce(Communicator& shard_comm);
  // After the collective: all-reduce across replicas (hybrid groups), widen to f32, accumulate into
  // the shard and free the transient buffers.
  void finish_grad_reduce(Communicator* replicate_comm);
  void zero_grads();
  // Writes the sum of squares of the reduced gradient over this rank's shard (the same range at
  // every stage) into `out`, one double in device memory.
  void grad_sum_squares(const Kernels& kernels, double* out) const;
  // Multiplies the reduced gradient over the optimizer range by `factor`.
  void scale_grads(const Kernels& kernels, float factor);

  // --- the optimizer step and publishing
  void optimizer_step(const Kernels& kernels, float lr, std::int64_t step);
  // Writes the updated master into the stored parameters; stages 1-2 then all-gather them
  // (returned Work), others return a completed Work.
  Work start_publish(Communicator& shard_comm);

  // --- state for checkpoints: "master" (f32) then the optimizer's tensors, each (range) elements.
  std::vector<StateTensor> state() const;
  void reset_optimizer() { optimizer_->reset(); }
  // The reduced f32 gradient over the optimizer range (tests).
  Tensor reduced_grads() const;

 private:
  Tensor allocate(std::int64_t numel, DType dtype, MemoryCategory category, MemoryKind kind = MemoryKind::kDevice);
  void bind_values();
  void unbind_values();

  std::string name_;
  FlatLayout layout_;
  Placement placement_;
  MixedPrecision precision_;
  Device& device_;
  std::unique_ptr<OptimizerState> optimizer_;

  Tensor stored_, compute_, gathered_, master_;
  Tensor grad_full_, grad_shard_, wire_;
  bool ready_ = false, gather_in_flight_ = false, grads_bound_ = false;
};

}  // namespace tessera
