// Loading a checkpoint into a ShardedEngine, at any rank count, ZeRO stage or hybrid group size.
//
// Each rank reads exactly what its new shards need — for every unit, the elements of its optimizer
// range (the whole buffer at stage 0, its shard otherwise) — from whichever old shard files hold
// them, by parameter name: a parameter's values are found through the stored layout (unit, offset),
// so a different rank count, padding or unit policy only changes which byte ranges are read.
// Nothing is gathered anywhere. Every chunk read is checked against its stored checksum (XXH3-64;
// XXH64 in a format-3 checkpoint).
//
// Validation comes before any change: the format version, the model fields of the RunConfig, every
// parameter's name and shape, every shard file's presence, size and save id are checked and all
// ranks agree (rank_agreement) before a single engine tensor is written. On such a failure every
// rank throws the same CheckpointError and the engine is untouched.
//
// Then the data, in one pass: each rank reads the chunks it needs — of each shard file in one sweep
// in file order, several requests in flight — straight into the engine's state tensors (host
// memory; other memory through host buffers, handed over once every rank read its part), verifying
// every checksum as the chunk arrives. A chunk refused here (its checksum, a read error) makes
// every rank throw the same CheckpointError, and part of the host state then holds the checkpoint:
// the engine is marked (ShardedEngine::mark_state_partial) and refuses forward, step and saves
// until a load completes, so a mix of two states is never trained on or saved.
//
// LoadOptions::verify_before_writing reads and verifies every chunk first, agrees, then reads them
// again (from the page cache) into the state: a checkpoint with a corrupted chunk then leaves the
// engine as it was, for a program that carries on with its current state after a refusal, at
// the cost of a second copy of every byte. Only a file changed between the two reads is refused
// after part of it was written (and the engine marked).
#pragma once

#include <filesystem>

#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

class ShardedEngine;
class ShardFileReader;

struct LoadResult {
  TrainingProgress progress;    // rng_state: this rank's stored words (empty when the checkpoint had fewer ranks)
  CheckpointMeta meta;          // what was stored (settings at save time, every rank's RNG words)
  std::int64_t bytes_read = 0;  // of shard-file data this rank loaded (each chunk once)
};

struct LoadOptions {
  // Verify every chunk before writing any state (two reads of each chunk; see above).
  bool verify_before_writing = false;
};

// Collective over `world` (the engine's world). `path`: a checkpoint directory (step_N). `expected`:
// this run's config; its model fields must equal the stored ones (fields present in both).
// Sets the master weights, Adam moments, optimizer step count and loss scaler, then publishes the
// parameters. Throws CheckpointError.
LoadResult load_checkpoint(ShardedEngine& engine, Communicator& world, const std::filesystem::path& path,
                           const RunConfig& expected, const LoadOptions& options = {});

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
