// Placement: where a unit's parameters, gradients and optimizer state live on this rank and when
// each is freed — the ZeRO table as data. It is derived once from the ZeRO stage, the mixed
// precision and the offload settings (make_placement); the unit buffers and the engine's schedule
// read it instead of testing the stage, and the memory planner runs the same code.
//
// Per unit of P (padded) elements on a shard group of N ranks, S = P/N:
//
//   stage | stored params  | grad accumulator (f32)      | optimizer range | after the step
//   0     | P              | P                           | P               | cast master -> params
//   1     | P              | P                           | S               | all-gather params
//   2     | P              | S (+ P transient, backward) | S               | all-gather params
//   3     | S (gathered P) | S (+ P transient, backward) | S               | cast master -> shard
//
// The compute copy (what the modules read) is in the compute dtype: the stored or gathered
// parameters themselves when their dtype is the compute dtype, else a transient converted copy.
// With a compute dtype other than f32, a micro-batch's gradients land in a transient buffer of
// that dtype (P), which is added into the f32 accumulator (stages 0-1) or reduced and added into the
// f32 shard (stages 2-3) once the unit's backward is done.
//
// The optimizer range holds the f32 master (a separate copy unless parameters are f32, when the
// stored parameters are the master — with f32 parameters and optimizer state offloaded to host
// memory the master is a host copy, as ZeRO-Offload keeps it; state on NVMe streams past the
// parameters, which stay the master) and the optimizer's state.
//
// On a discrete device (a GPU: its memory is not host memory) an optimizer range offloaded to
// pinned host memory or NVMe is updated by the host (ZeRO-Offload): the reduced gradient range is
// copied to a pinned host buffer, the host's kernels update the master and state there, and the
// updated parameters are copied back into the device's stored parameters. The master is then the
// parameters only when both live in the same memory. Gradient collectives: all-reduce at
// stage 0, reduce-scatter otherwise; stages 0-1 reduce once per step (on the last micro-batch,
// DDP's no_sync), stages 2-3 every micro-batch.
#pragma once

#include <string>

#include "tessera/precision/mixed_precision.hpp"
#include "tessera/runtime/memory_kind.hpp"
#include "tessera/sharding/offload_config.hpp"

namespace tessera {

// What ZeRO shards (docs/ARCHITECTURE.md's table). kStage0 replicates everything (DDP).
enum class ZeroStage { kStage0 = 0, kStage1 = 1, kStage2 = 2, kStage3 = 3 };
int zero_stage_number(ZeroStage stage);

// How much of a unit's flat buffer this rank holds: all of it, or its shard.
enum class Extent { kFull, kShard };
const char* extent_name(Extent extent);  // "full", "shard"

enum class GradCollective { kAllReduce, kReduceScatter };

struct Placement {
  // --- parameters (param dtype)
  Extent stored_params = Extent::kFull;
  MemoryKind params_memory = MemoryKind::kDevice;
  // The stored parameters are all-gathered into a transient full buffer before each use (stage 3).
  bool gather_for_compute = false;
  // The copy modules compute on (compute dtype) exists only while the unit runs (stage 3, or a param
  // dtype other than the compute dtype); otherwise it is the stored parameter buffer itself.
  bool transient_compute_copy = false;
  // f32 parameters double as the f32 master weights (no separate copy).
  bool master_is_params = true;
  // After the step, the updated shards are all-gathered into every rank's full stored
  // parameters (stages 1-2); otherwise each rank casts its own master range into them.
  bool publish_by_all_gather = false;

  // --- gradients (f32 accumulator)
  Extent grad_accumulator = Extent::kFull;
  // The modules write a micro-batch's gradients into a transient buffer in the compute dtype (not
  // f32), accumulated into (or reduced into) the f32 accumulator after the unit's backward.
  bool transient_compute_grads = false;
  // The full gradient buffer of a unit is allocated for its backward and freed once its reduction
  // has been accumulated into the shard (stages 2-3).
  bool transient_full_grads = false;
  GradCollective grad_collective = GradCollective::kAllReduce;
  bool reduce_every_micro_step = false;

  // --- optimizer range: f32 master (when separate) and optimizer state
  Extent optimizer_range = Extent::kFull;
  MemoryKind optimizer_memory = MemoryKind::kDevice;
  // The host updates the optimizer range (a discrete device with the optimizer offloaded): the
  // reduced gradients go to a pinned host copy (range, f32), and when the stored parameters are on
  // the device the updated ones come back through the same bytes.
  bool update_on_host = false;

  // An inference engine (EngineUse::kInference) has neither: no gradient buffers, no optimizer
  // state (the master stays: checkpoints restore the parameters through it).
  bool gradients = true;
  bool optimizer_state = true;

  std::string describe() const;  // one line: "params full (device), grads shard + transient full, ..."
};

// `memory_is_host`: the device's memory is host memory (Device::memory_is_host; the CPU device).
// Throws std::invalid_argument for parameter offload below stage 3 (ranks compute on their full
// stored parameters there, so they cannot leave the device), and on a discrete device for
// parameter offload with the optimizer left on the device (the device's kernels cannot update
// parameters in host memory).
Placement make_placement(ZeroStage stage, const MixedPrecision& precision, const OffloadConfig& offload,
                         bool memory_is_host = true);

}  // namespace tessera
