// FlatParamUnit: the parameters of one sharding unit laid out in one flat buffer (FSDP's
// FlatParameter), padded to a multiple of the shard-group size, with every buffer ZeRO needs for it:
// the compute copy the modules' Parameters view, the parameter shard, the f32 master shard and
// Adam moments, the gradient buffers and the staging buffers of the gradient collectives.
//
// Layout: entry i occupies [offset_i, offset_i + numel_i) of the flat buffer, in registration
// order; padded_numel = shard_numel * shard_ranks; this rank's shard is
// [shard_rank * shard_numel, (shard_rank + 1) * shard_numel). Padding is zero and never updated.
//
// What lives where (P = padded_numel, S = shard_numel, f32 unless noted):
//   stage | parameters (param dtype)      | gradients                     | optimizer state
//   0     | P                             | P                             | m, v: P (+ master P if param dtype != f32)
//   1     | P                             | P                             | m, v: S (+ master S)
//   2     | P                             | S (+ P while the unit's backward runs) | m, v: S (+ master S)
//   3     | S (+ P while gathered)        | S (+ P while the unit's backward runs) | m, v: S (+ master S)
// With param dtype f32 the master weights are the parameters themselves (no copy). With another
// param dtype the f32 compute copy (P) exists only while the unit runs (category comm buffers), as
// do gathered parameters and reduce staging buffers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "precision/mixed_precision.hpp"
#include "runtime/module.hpp"
#include "runtime/optim/adamw.hpp"
#include "sharding/sharding_config.hpp"

namespace tessera {

struct FlatEntry {
  std::string name;  // full parameter name
  Parameter* parameter;
  std::int64_t offset;  // in elements, within the flat buffer
  std::int64_t numel;
};

class FlatParamUnit {
 public:
  // `parameters` (full names) are laid out in order. shard_ranks/shard_rank: the shard group.
  FlatParamUnit(std::string name, const std::vector<NamedParameter>& parameters, ZeroStage stage,
                const MixedPrecision& precision, int shard_ranks, int shard_rank, Device& device);
  ~FlatParamUnit();
  FlatParamUnit(const FlatParamUnit&) = delete;
  FlatParamUnit& operator=(const FlatParamUnit&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<FlatEntry>& entries() const { return entries_; }
  std::int64_t numel() const { return numel_; }
  std::int64_t padded_numel() const { return shard_numel_ * shard_ranks_; }
  std::int64_t shard_numel() const { return shard_numel_; }
  std::int64_t shard_begin() const { return shard_numel_ * shard_rank_; }
  // The range the optimizer updates: the whole buffer at stage 0, this rank's shard otherwise.
  std::int64_t optimizer_begin() const;
  std::int64_t optimizer_numel() const;

  // Fills what this rank stores with the parameters' initial values for `seed` (the same values
  // materialize_parameters gives, whatever the stage or rank count).
  void initialize(std::uint64_t seed);

  // --- parameters for compute
  bool params_ready() const { return ready_; }
  bool gather_in_flight() const { return gather_in_flight_; }
  // Starts making the compute copy: stage 3 all-gathers the shards (async); otherwise nothing to send.
  Work start_gather(Communicator& shard_comm);
  // After the gather's Work completed: converts to f32 if needed and binds every Parameter's value.
  void finish_gather();
  // Frees the compute copy when it is transient (stage 3, or param dtype != f32) and unbinds values.
  void release_params();
  bool params_transient() const;

  // --- gradients
  // Binds every Parameter's grad into the full f32 gradient buffer (allocated, zeroed, when transient).
  void prepare_grads();
  // Starts the gradient collective for this stage (all-reduce at 0, reduce-scatter otherwise), avg.
  Work start_grad_reduce(Communicator& shard_comm);
  // After the collective: optional all-reduce across replicas (hybrid), accumulation into the f32
  // gradient shard (stages 2, 3), and release of transient buffers.
  void finish_grad_reduce(Communicator* replicate_comm);
  void zero_grads();

  // --- optimizer step (on reduced gradients)
  // Sum of squares of the reduced gradient over this rank's shard range (the same range at every stage).
  double grad_sum_squares(const Kernels& kernels);
  void scale_grads(const Kernels& kernels, float factor);
  bool grads_finite(const Kernels& kernels);
  void adamw_step(const Kernels& kernels, const AdamWConfig& config, std::int64_t step, float lr);
  // Writes the updated master weights into the stored parameters; stages 1 and 2 then all-gather
  // them (returned Work); stages 0 and 3 return a completed Work.
  Work start_publish(Communicator& shard_comm);

  // --- state for checkpoints (f32, optimizer range)
  Tensor master() const { return master_; }
  Tensor exp_avg() const { return exp_avg_; }
  Tensor exp_avg_sq() const { return exp_avg_sq_; }
  Tensor grad_shard() const { return grad_shard_; }

 private:
  void bind_values();
  void unbind_values();
  Tensor allocate(std::int64_t numel, DType dtype, MemoryCategory category);

  std::string name_;
  std::vector<FlatEntry> entries_;
  ZeroStage stage_;
  MixedPrecision precision_;
  int shard_ranks_, shard_rank_;
  Device& device_;
  std::int64_t numel_ = 0, shard_numel_ = 0;

  Tensor compute_;      // (P) f32: what Parameters view while the unit runs
  Tensor params_full_;  // (P) param dtype: stages 0-2 with param dtype != f32
  Tensor param_shard_;  // (S) param dtype: stage 3
  Tensor gathered_;     // (P) param dtype: stage 3 while a gather is in flight
  Tensor master_;       // (optimizer range) f32 master weights (may view compute_ / param_shard_)
  Tensor exp_avg_, exp_avg_sq_;  // (optimizer range) Adam m, v
  Tensor grad_full_;    // (P) f32: where backward accumulates
  Tensor grad_shard_;   // (optimizer range) f32 reduced gradient (may view grad_full_)
  Tensor reduce_buffer_;  // (P) reduce dtype staging, when reduce dtype != f32
  bool ready_ = false, gather_in_flight_ = false, grads_bound_ = false;
};

}  // namespace tessera
