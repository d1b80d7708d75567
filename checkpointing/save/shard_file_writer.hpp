// Writes one rank's shard file (shard_RRRRR.h5): for every unit, group /units/<unit> with one
// dataset per state tensor of the snapshot — "master", then the optimizer's ("exp_avg",
// "exp_avg_sq" for AdamW) — each (shard_numel / elements_per_value) values in the tensor's dtype
// (state_file_types), chunked, with attributes `unit`, `offset` (the shard's first element in the
// unit's flat buffer), `unit_numel`, `chunk_elements`, `dtype` and `elements_per_value`; beside each a table
// <name>_<checksum> ((chunks) u64) holding the checksum of every chunk's bytes (<name>_xxh3_64: XXH3-64,
// checksum.hpp). Root attributes: format version, kind "shard", shard, shard_ranks, step, save_id (16 hex
// digits: the id meta.h5 of the same save holds), chunk_checksum (the checksum's name).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/checkpointing/save/shard_snapshot.hpp"

namespace tessera {

enum class CheckpointCompression { kNone, kDeflate };

// "none" | "deflate"; throws std::invalid_argument naming --checkpoint-compression.
CheckpointCompression parse_checkpoint_compression(const std::string& text);
const char* checkpoint_compression_name(CheckpointCompression compression);

inline constexpr std::int64_t kDefaultChunkElements = std::int64_t{1} << 20;  // 4 MiB of f32

struct ShardWriteOptions {
  CheckpointCompression compression = CheckpointCompression::kNone;  // deflate: shuffle + level 1
  // The largest chunk: each dataset is cut into as few chunks as this allows, all of one size.
  std::int64_t chunk_elements = kDefaultChunkElements;
  // The chunks' checksum, recorded in the file (XXH64 only for tests of what older files hold).
  ChunkChecksum checksum = ChunkChecksum::kXxh3_64;
  // Called once after the first dataset is written (tests use it to stop a save half-way).
  std::function<void()> after_first_dataset;
};

// Writes, closes and fsyncs `path`. Returns the file's size in bytes. Throws CheckpointError; when
// the file system is full, the message says so with the bytes needed (disk_space.hpp).
std::int64_t write_shard_file(const std::string& path, const ShardSnapshot& snapshot, int shard, int shard_ranks,
                              std::int64_t step, std::uint64_t save_id, const ShardWriteOptions& options);

// The name of the master weights' dataset inside a unit group; the optimizer's follow it.
inline constexpr const char* kMasterDataset = "master";
std::string unit_group_path(const std::string& unit);  // "/units/<unit>"

}  // namespace tessera
