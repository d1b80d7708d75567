// Loading a checkpoint into a ShardedEngine, at any rank count, ZeRO stage or hybrid group size.
//
// Each rank reads exactly what its new shards need — for every unit, the elements of its optimizer
// range (the whole buffer at stage 0, its shard otherwise) — from whichever old shard files hold
// them, by parameter name: a parameter's values are found through the stored layout (unit, offset),
// so a different rank count, padding or unit policy only changes which byte ranges are read.
// Nothing is gathered anywhere. Every chunk read is checked against its stored XXH64.
//
// Validation comes before any change: the format version, the model fields of the RunConfig, every
// parameter's name and shape, every shard file's presence and size, and every checksum are checked
// and all ranks agree (rank_agreement) before a single engine tensor is written. On failure every
// rank throws the same CheckpointError and the engine is untouched.
//
// Two passes over the chunks a rank needs: the first reads them from the disk (several requests in
// flight) and verifies them through small reused buffers; once every rank agreed, the
// second reads them again — from the page cache — straight into the engine's state tensors (host
// memory; other memory through host buffers) and checks the checksums once more. No host copy of
// the whole state is ever made: memory the process never touched costs more to fault in than a
// second copy out of the page cache. A file changed between the passes (another process writing
// into the checkpoint while it loads) is still refused on every rank, but then after part of it
// was loaded.
#pragma once

#include <filesystem>

#include "checkpointing/checkpoint_meta.hpp"
#include "comm/communicator.hpp"

namespace tessera {

class ShardedEngine;
class ShardFileReader;

struct LoadResult {
  TrainingProgress progress;  // rng_state: this rank's stored words (empty when the checkpoint had fewer ranks)
  CheckpointMeta meta;        // what was stored (settings at save time, every rank's RNG words)
  std::int64_t bytes_read = 0;  // by this rank, from shard files
};

// Collective over `world` (the engine's world). `path`: a checkpoint directory (step_N). `expected`:
// this run's config; its model fields must equal the stored ones (fields present in both).
// Sets the master weights, Adam moments, optimizer step count and loss scaler, then publishes the
// parameters. Throws CheckpointError.
LoadResult load_checkpoint(ShardedEngine& engine, Communicator& world, const std::filesystem::path& path,
                           const RunConfig& expected);

// Checks that every shard file of `meta` exists in `dir` with its recorded size: kMissingFile /
// kTruncatedFile naming the file. Not collective.
void check_shard_files(const CheckpointMeta& meta, const std::filesystem::path& dir);

// Checks that `reader`'s file belongs to the save `meta` describes: the same step and (format 3)
// the same save id. kCorruptData naming the shard file, `meta_path` and both ids and steps — a shard
// file copied in from another checkpoint. Not collective.
void check_same_save(const ShardFileReader& reader, const CheckpointMeta& meta, const std::string& meta_path);

// Checks the model fields present in both; kConfigMismatch naming the field and both values.
void check_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where);

}  // namespace tessera
