// CheckpointMeta: everything in meta.h5 — format version, progress (step, tokens, loader position),
// the engine's settings at save time (ZeRO stage, world size, hybrid group, mixed precision,
// optimizer and its settings, clip, optimizer step count, loss scaler), the program's RunConfig,
// every rank's RNG words, the unit layout with the list of state tensors, and the size of every
// shard file — plus, written beside them, the virtual datasets showing every full tensor by name
// (virtual_datasets.hpp).
//
// meta.h5 layout:
//   /                  attributes: tessera_checkpoint_format, kind = "meta", save_id (16 hex digits,
//                      also in every shard file of the save), healthy (1, or 0 when the state came
//                      after a step skipped as non-finite), step, tokens_seen,
//                      samples_seen, data_seed, optimizer_steps, world_size, shard_ranks,
//                      hybrid_group, zero_stage, param_dtype, reduce_dtype, compute_dtype (absent
//                      from checkpoints of f32-only builds: f32), optimizer ("adamw"),
//                      adamw_beta1, adamw_beta2, adamw_eps, adamw_weight_decay, grad_clip, created
//   /config/model, /config/run    one string attribute per RunConfig field
//   /config            attribute effective: the program's effective configuration (text; only
//                      when the program recorded one)
//   /loss_scaler       attributes scale, good_steps, hysteresis_left (only when the run scales)
//   /rng/rank_RRRRR    (words) u64 per world rank
//   /shards/file_bytes (shard_ranks) i64
//   /layout/unit_names, unit_numel, unit_shard_numel, param_names, param_unit, param_offset,
//           param_ndim, param_dims (all parameters' dims, concatenated), state_names,
//           state_dtypes, state_elements_per_value (the datasets of every unit: "master" f32, then
//           the optimizer's; one value per that many elements), attribute state_alignment
//   /model/<param>, /optimizer/<state>/<param>   virtual, in the state's dtype
//   /xxh64             one attribute per value above: its XXH64 (meta_digests.hpp)
// Reading checks every value against its digest and the layout's structure (check_layout_structure):
// a damaged meta.h5 is refused naming the file and the value, never read as a different layout.
// meta.h5 is the same in formats 3 and 4 (4 changed the shard files' chunk checksums). Formats 1 and
// 2 (without save ids, digests or a state list) are refused by version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_layout.hpp"
#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/precision/loss_scaler.hpp"
#include "tessera/precision/mixed_precision.hpp"
#include "tessera/sharding/sharding_config.hpp"

namespace tessera {

// Whether a checkpoint's state came from a healthy step: the caller's last optimizer step was taken
// with a finite loss inside the spike guard's band (kHealthy), or not (kNonFinite: skipped, or a loss
// not finite or out of band — the run is diverging). A later judgement sits beside meta.h5
// (health_mark.hpp).
enum class StateHealth { kHealthy, kNonFinite };

struct CheckpointMeta {
  std::int64_t format_version = 0;
  std::uint64_t save_id = 0;  // random, never 0, agreed by the ranks of one save
  StateHealth health = StateHealth::kHealthy;
  TrainingProgress progress;  // rng_state unused here: see rng_states
  std::int64_t optimizer_steps = 0;
  int world_size = 1;
  int hybrid_group = 0;
  ZeroStage stage = ZeroStage::kStage0;
  MixedPrecision precision;
  OptimizerConfig optimizer;
  float grad_clip = 0.0f;
  std::optional<DynamicLossScaler::State> loss_scaler;
  RunConfig config;
  std::vector<std::vector<std::uint64_t>> rng_states;  // per world rank
  CheckpointLayout layout;
  std::vector<std::int64_t> shard_file_bytes;  // per shard file
  std::string created;                         // UTC, "2025-01-31T12:00:00Z"
};

// Writes `path` (meta plus virtual datasets), closes and fsyncs it. Throws CheckpointError.
void write_meta_file(const std::string& path, const CheckpointMeta& meta);

// Reads `path`. Refuses (kUnknownFormat) a format version this build does not read before reading
// anything else; kMissingFile when absent; kCorruptData when unparsable.
CheckpointMeta read_meta_file(const std::string& path);

// The `healthy` flag of the meta.h5 at `path` (format < 3: kHealthy); nullopt when it cannot be read.
std::optional<StateHealth> read_checkpoint_health(const std::string& path);

}  // namespace tessera
