// FlatParamUnit: the buffers of one sharding unit and what happens to them in a step — the
// gathers that make its parameters ready for compute, the gradient collectives, the optimizer step
// over its optimizer range and the publishing of the updated parameters. What it stores where is
// not decided here: the FlatLayout says where each parameter sits, the Placement (the ZeRO table
// as data) which buffers exist, how large and in which memory (device, pinned host or the NVMe
// store), and the OptimizerRule names the optimizer's state and updates it.
//
// Buffers (P = padded_numel, S = shard_numel, "range" = the optimizer range, P or S):
//   stored_      (P or S) param dtype   kParameters      the parameters as stored between steps
//                                                        (placed: NVMe with parameter offload)
//   compute_     (P) compute dtype                       what the Parameters view while the unit
//                                                        runs: stored_ or gathered_ itself (param
//                                                        dtype = compute dtype), or a transient
//                                                        converted copy (kCommBuffers)
//   staged_      (S) param dtype        kCommBuffers     stage 3 with NVMe parameters: the shard
//                                                        read from the file for its gather
//   gathered_    (P) param dtype        kCommBuffers     stage 3, while a gather is in flight
//   master_      (range) f32            kOptimizerState  stored_ (or a view) when master_is_params
//   state_       (range / per) each     kOptimizerState  the rule's state tensors (placed)
//   grad_full_   (P) f32                kGradients       where backward accumulates (f32 compute),
//                                                        the f32 accumulator of stages 0-1, or
//                                                        (stages 2-3) the widened micro-batch
//                                                        gradients an f32/f16 wire reduces
//   grad_compute_ (P) compute dtype     kGradients       a non-f32 compute dtype: where backward
//                                                        writes one micro-batch's gradients
//                                                        (transient; a bf16 wire reduces it in place)
//   grad_shard_  (S) f32                kGradients       the accumulated reduced shard (stages 2-3)
//   grad_host_   (range) f32 pinned     kGradients       update_on_host: the reduced gradients the
//                                                        host updates from
//   params_host_ (range) param dtype    (grad_host_'s)   update_on_host with device parameters:
//                                                        the updated ones on their way back, in
//                                                        grad_host_'s bytes (read before written)
//   uploaded_    (S) param dtype        kCommBuffers     stage 3 with host parameters on a
//                                                        discrete device: the shard copied in for
//                                                        its gather
// Gradient collectives run on the f32 buffers in the reduce dtype (Communicator::all_reduce_f32,
// reduce_scatter_f32: the communicator converts as it sends and receives, so no wire copy exists
// here); the first reduction of a step at stages 2-3 lands straight in grad_shard_. With bf16
// micro-batch gradients and a bf16 wire, stages 2-3 reduce grad_compute_ itself (in place, no
// narrowing pass) and add the reduced bf16 slice into grad_shard_ (Kernels::add_bf16); otherwise
// the micro-batch gradients are widened into grad_full_ first.
// Padding is zero and never updated. The optimizer step is one pass over the range (streamed in
// blocks when some of it is in the NVMe store) that updates the master and state and writes the
// updated parameters into the stored ones. With Placement::update_on_host the pass runs on the host
// with the host's kernels, between a copy of the gradients to host memory (started as soon as the
// step's last reduction of the unit is done, on the device's copy stream) and a copy of the updated
// parameters back (the compute stream waits for it before using them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/communicator.hpp"
#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/runtime/event.hpp"
#include "tessera/runtime/offload/aligned_buffer.hpp"
#include "tessera/runtime/offload/placed_tensor.hpp"
#include "tessera/sharding/flat_layout.hpp"
#include "tessera/sharding/host_update_stats.hpp"
#include "tessera/sharding/placement.hpp"

namespace tessera {

class FlatParamUnit {
 public:
  // `store` holds what the Placement puts on NVMe (null when nothing is).
  FlatParamUnit(std::string name, FlatLayout layout, const Placement& placement, const MixedPrecision& precision,
                const OptimizerConfig& optimizer, Device& device, NvmeStore* store = nullptr);
  ~FlatParamUnit();  // unbinds the Parameters' values and grads
  FlatParamUnit(const FlatParamUnit&) = delete;
  FlatParamUnit& operator=(const FlatParamUnit&) = delete;

  const std::string& name() const { return name_; }
  const FlatLayout& layout() const { return layout_; }
  // What this unit stores where (the engine's table, or the f32 one for a unit kept in f32).
  const Placement& placement() const { return placement_; }
  // The parameters as stored between steps (param dtype; P or S values: Placement::stored_params).
  const PlacedTensor& stored_params() const { return stored_; }
  // The range the optimizer updates on this rank: the whole buffer at stage 0, the shard otherwise.
  FlatRange optimizer_range() const;

  // Fills the master and stored parameters with the initial values for `seed` (the values
  // materialize_parameters gives); the optimizer state is zero from construction. Nothing to do on
  // a device without data. With NVMe placement, after the store's file is allocated.
  void initialize(std::uint64_t seed);

  // --- parameters for compute
  bool params_ready() const { return ready_; }
  bool gather_in_flight() const { return gather_in_flight_; }
  // Starts making the compute copy: a gather of the shards (stage 3; with NVMe parameters the
  // shard's read from the file starts now and the gather when the Work is waited for), otherwise
  // nothing to send.
  Work start_gather(Communicator& shard_comm);
  // After the gather's Work completed: widens to f32 when needed and binds every Parameter's value.
  void finish_gather();
  // Frees a transient compute copy and unbinds the values (nothing when the copy is persistent).
  void release_params();

  // --- the access guard: while it is on, the Parameters' value and grad stay unbound whatever the
  // buffers hold, except between open_access() and its close_access() (calls nest). ShardedEngine
  // turns it on for the length of its model calls and opens a unit between the hooks of each module
  // that uses it, so a module reached past its slot finds its parameters unbound at every stage.
  // Off (the default, and between the engine's calls), the Parameters are bound as the buffers are.
  void set_access_guard(bool on);
  void open_access();
  void close_access();
  // The guard is on and no module using the unit is between its hooks.
  bool access_closed() const { return guarded_ && open_ == 0; }

  // --- gradients
  // Binds every Parameter's grad into the buffer backward writes (allocated zeroed when transient):
  // the full f32 gradient buffer, or with a non-f32 compute dtype grad_compute_.
  void prepare_grads();
  // A micro-step whose gradients are not reduced yet (stages 0-1 before the step's last): adds the
  // compute-dtype gradients into the f32 accumulator and frees them. Nothing to do in f32.
  void accumulate_grads();
  // Starts this unit's gradient collective (all-reduce or reduce-scatter, averaging, in the reduce
  // dtype).
  Work start_grad_reduce(Communicator& shard_comm);
  // After the collective: all-reduce across replicas (hybrid groups), accumulate into the shard
  // (unless the collective wrote it there) and free the transient buffers. With `sum_squares_out`
  // (one double in device memory) and a shard accumulated by an add (stages 2-3), the add also
  // writes the shard's sum of squares there (Kernels::add_sum_squares), and grad_sum_squares into
  // the same place then has nothing left to do: the gradient norm costs no pass of its own.
  void finish_grad_reduce(Communicator* replicate_comm, double* sum_squares_out = nullptr);
  void zero_grads();
  // update_on_host: starts copying the reduced gradient range to host memory on the copy stream,
  // after the work queued on the compute stream so far (call once the step's gradients are final).
  // Nothing to do otherwise, or when the copy has started since the gradients last changed.
  void start_grad_offload();
  const HostUpdateStats& host_update_stats() const { return stats_; }
  void reset_host_update_stats() { stats_ = {}; }
  // Writes the sum of squares of the reduced gradient over this rank's shard (the same range at
  // every stage) into `out`, one double in device memory — unless the last reduce wrote it there
  // and the gradient has not changed since (the same bits either way).
  void grad_sum_squares(const Kernels& kernels, double* out) const;
  // The same over the part of `range` (elements of the unit's flat buffer) inside this rank's shard;
  // 0 when they do not meet (a tensor-parallel engine counts its replicated parameters once).
  void grad_sum_squares(const Kernels& kernels, FlatRange range, double* out) const;

  // --- the optimizer step and publishing
  // Updates the master and state over the optimizer range from the reduced gradient times
  // `grad_scale` (the loss-scale division and clipping, applied inside the update; the gradient
  // is not written) and writes the updated parameters into this rank's part of the stored ones.
  void optimizer_step(const Kernels& kernels, float lr, std::int64_t step, float grad_scale);
  // Writes the master into the stored parameters unless the step just did; stages 1-2 then
  // all-gather them (returned Work), others return a completed Work.
  Work start_publish(Communicator& shard_comm);

  // --- state for checkpoints: "master" (f32) then the optimizer's tensors, over the range.
  // Tensors in memory are given as such; those in the NVMe store have an undefined tensor and are
  // reached through read_state / write_state.
  std::vector<StateTensor> state() const;
  // Values [first, first + count) of state tensor k (0: master) to or from host memory.
  void read_state(std::size_t k, std::int64_t first, std::int64_t count, void* host) const;
  void write_state(std::size_t k, std::int64_t first, std::int64_t count, const void* host);
  void reset_optimizer();
  // The reduced f32 gradient over the optimizer range (tests). The caller may change it, so a sum
  // of squares kept from the reduce is dropped.
  Tensor reduced_grads();

 private:
  // A zeroed buffer (accumulators, state, padding that must read as zero).
  Tensor allocate(std::int64_t numel, DType dtype, MemoryCategory category, MemoryKind kind = MemoryKind::kDevice);
  // A buffer left uninitialised because every element is written before it is read (gather
  // targets, conversion outputs): no zero-fill pass.
  Tensor allocate_overwritten(std::int64_t numel, DType dtype, MemoryCategory category);
  void bind_values();
  void unbind_values();
  void bind_grads(const Tensor& buffer);
  void unbind_grads();
  // Writes the Parameters' value and grad views as the state says: bound ones while accessible
  // (access_closed() false), none otherwise.
  void sync_bindings();
  // finish_grad_reduce after a bf16 collective on grad_compute_ (stages 2-3, bf16 wire).
  void finish_compute_grad_reduce(Communicator* replicate_comm, double* sum_squares_out);
  const PlacedTensor& placed_state(std::size_t k) const { return k == 0 ? master_ : state_[k - 1]; }
  PlacedTensor& placed_state(std::size_t k) { return k == 0 ? master_ : state_[k - 1]; }
  // This rank's optimizer range inside the stored parameters (what publishing writes).
  PlacedTensor published_range() const;
  Tensor reduced_grad_range() const;
  // The table the optimizer pass runs with: the host's when the host updates (and the device holds
  // data), else the device's `kernels`.
  const Kernels& update_kernels(const Kernels& kernels) const;
  // Where publishing writes the updated parameters (param dtype, the optimizer range): the stored
  // ones, or the pinned host buffer they go to the device from (grad_host_'s memory).
  PlacedTensor publish_target() const;
  // After publishing into params_host_: copies it into the stored parameters on the copy stream and
  // makes the compute stream wait for the copy.
  void upload_published();

  std::string name_;
  FlatLayout layout_;
  Placement placement_;
  MixedPrecision precision_;
  Device& device_;
  NvmeStore* store_;
  std::unique_ptr<OptimizerRule> rule_;

  PlacedTensor stored_, master_;
  std::vector<PlacedTensor> state_;
  AlignedBuffer staged_;
  Tensor compute_, gathered_;
  Tensor grad_full_, grad_shard_, grad_compute_;
  Tensor grad_host_, params_host_, uploaded_;
  Event grad_offload_;           // the copy of the gradients to grad_host_
  Event upload_;                 // the copy of params_host_ to the device
  bool grad_offloaded_ = false;  // started since the gradients last changed
  HostUpdateStats stats_;
  bool ready_ = false, gather_in_flight_ = false, grads_bound_ = false;
  Tensor grad_binding_;              // the buffer the grads are bound into, while grads_bound_
  bool guarded_ = false;             // the access guard is on
  int open_ = 0;                     // open_access() calls not yet closed
  bool shard_is_zero_ = true;        // grad_shard_ holds zeros (constructed, or zero_grads since)
  bool reduced_into_shard_ = false;  // the collective in flight writes grad_shard_ itself
  bool reduced_in_compute_ = false;  // the collective in flight reduces grad_compute_ in place (bf16 wire)
  bool published_by_step_ = false;
  // Where the last reduce wrote the sum of squares of the unchanged shard gradient (null: nowhere).
  double* sum_squares_kept_in_ = nullptr;
};

}  // namespace tessera
