// Saving a checkpoint: every rank writes its own shard file in parallel (no gather to rank 0),
// then the save is committed atomically:
//   1. rank 0 creates DIR and removes stale step_*.tmp directories; all agree
//   2. each writing rank writes DIR/step_N.tmp/shard_RRRRR.h5 and fsyncs it; all agree
//   3. rank 0 writes meta.h5 (with every shard file's size), fsyncs it and the directory; all agree
//   4. rank 0 renames step_N.tmp -> step_N, fsyncs DIR, points DIR/latest at it (latest.tmp
//      renamed over latest), applies --keep-last retention (checkpoint_retention.hpp); all agree
// Every file of the save carries the same save id (random, chosen by rank 0 and broadcast) and step.
// "All agree" is rank_agreement: a rank that fails makes every rank throw its message, so the
// commit happens only when every file is whole, and no rank hangs.
//
// Which ranks write: stage 0 writes each rank's shard range of the (replicated) state; hybrid
// groups (stage > 0) write from the first replica group only (world ranks 0..H-1), the other
// groups hold identical copies and only take part in the agreement.
//
// A save splits into prepare_save (at the step boundary, on the training thread: captures the
// engine's settings and this rank's shard as a ShardSnapshot) and write_checkpoint (collective over
// a communicator no other thread uses at the same time, so it may run in a background thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/checkpointing/save/shard_snapshot.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

class ShardedEngine;

// Points of a save that tests stop at (with SIGKILL) to check that a crash leaves the previous
// checkpoint whole. kCommitted and kLatestUpdated are reached on rank 0 only.
enum class SavePhase {
  kShardPartlyWritten,  // after this rank's first dataset
  kShardsWritten,       // every shard file written and fsynced
  kMetaWritten,         // meta.h5 written; the directory is still step_N.tmp
  kCommitted,           // renamed to step_N; latest not yet updated
  kLatestUpdated,       // latest points at step_N; retention not yet applied
  kRetentionRenamed,    // retention renamed an old checkpoint to .deleted_<name>, not yet removed it
};

struct SaveOptions {
  CheckpointCompression compression = CheckpointCompression::kNone;
  int keep_last = 0;  // keep the newest K committed checkpoints (and the newest healthy one); 0 keeps all
  StateHealth health = StateHealth::kHealthy;           // stored in meta.h5; retention keeps the newest healthy
  std::int64_t chunk_elements = kDefaultChunkElements;  // the largest chunk (ShardWriteOptions)
  // For tests: called with the phase and the step being saved on the ranks that reach a phase.
  std::function<void(SavePhase, std::int64_t step)> phase_hook;
};

// What write_checkpoint needs, captured at a step boundary.
struct SaveRequest {
  std::filesystem::path dir;
  CheckpointMeta meta;                   // settings, progress, config, layout (sizes, rng filled later)
  std::vector<std::uint64_t> rng_state;  // this rank's
  ShardSnapshot snapshot;                // this rank's shard (empty units when shard < 0)
  int shard = -1;                        // shard file this rank writes, or -1
  int world_rank = 0;
};

// What a committed save wrote, the same on every rank but bytes_written.
struct SaveResult {
  std::filesystem::path path;  // DIR/step_N
  std::int64_t step = 0;
  std::int64_t bytes_written = 0;     // by this rank (its shard file, plus meta.h5 on rank 0)
  std::int64_t checkpoint_bytes = 0;  // every file of the save: all shard files and meta.h5
  double seconds = 0.0;               // write_checkpoint, from its start to the commit
};

// Not collective. `snapshot` must stay valid until write_checkpoint returns.
SaveRequest prepare_save(ShardedEngine& engine, const std::filesystem::path& dir, const TrainingProgress& progress,
                         const RunConfig& config, ShardSnapshot snapshot);

// Collective over `comm` (every world rank, in world order). Throws CheckpointError on every rank
// when any rank failed; the previous checkpoints and `latest` are then untouched.
SaveResult write_checkpoint(Communicator& comm, const SaveRequest& request, const SaveOptions& options);

// A synchronous save at a step boundary (collective over `world`, the engine's world).
SaveResult save_checkpoint(ShardedEngine& engine, Communicator& world, const std::filesystem::path& dir,
                           const TrainingProgress& progress, const RunConfig& config, const SaveOptions& options = {});

}  // namespace tessera
