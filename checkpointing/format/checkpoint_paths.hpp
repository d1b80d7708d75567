// The on-disk layout of a checkpoint run directory and the file-system steps of an atomic commit:
//
//   DIR/step_0000500/          one committed checkpoint (renamed from step_0000500.tmp/ when whole)
//        meta.h5               written by rank 0 last
//        shard_00000.h5 ...    one per shard rank
//   DIR/step_0000600.tmp/      a save in progress, or the remains of a crash (ignored, removed later)
//   DIR/latest -> step_0000500 symlink, replaced atomically (latest.tmp renamed over it)
//   DIR/.deleted_step_0000400/ a checkpoint being deleted: renamed away first, then removed, so a
//                              crash never leaves a half-deleted step_* directory (removed later)
//
// A crash at any moment leaves every committed directory whole and `latest` pointing at one of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// Checkpoint format versions. 1: every unit holds exactly master, exp_avg and exp_avg_sq (f32).
// 2: meta.h5 lists the state tensors (/layout/state_names, state_dtypes) and the optimizer that
// declared them; shard datasets carry a dtype attribute.
// 3: every file carries the save's id (meta.h5 and every shard file: attribute save_id) and step;
// meta.h5 records the XXH64 of every value it stores (/xxh64, meta_digests.hpp) and whether the
// state came from a healthy step.
// 4: every shard file names the checksum of its chunks (attribute chunk_checksum, "xxh3_64" when
// this build writes it; checksum.hpp) and its tables are <dataset>_<checksum>; format 3 files use
// XXH64 (<dataset>_xxh64). meta.h5 is as in 3.
// 5: a tensor-parallel layout (/layout: attribute tensor_parallel, unit_tp_rank, param_split,
// param_segments; CheckpointLayout). A checkpoint without tensor parallelism is written as 4.
// This build writes 4 and 5 and reads 3 to 5: 1 and 2 were superseded within a day of being written
// and are refused by version.
inline constexpr std::int64_t kCheckpointFormatVersion = 5;
inline constexpr std::int64_t kTensorParallelFormat = 5;
inline constexpr std::int64_t kPlainFormat = 4;
inline constexpr std::int64_t kOldestReadableFormat = 3;
inline constexpr const char* kMetaFileName = "meta.h5";
inline constexpr const char* kLatestName = "latest";
inline constexpr const char* kDeletedPrefix = ".deleted_";  // a checkpoint directory being removed

// Throws CheckpointError(kUnknownFormat) naming `path` and the version unless this build reads it.
void check_readable_format(std::int64_t version, const std::string& path);

std::string step_dir_name(std::int64_t step);  // "step_0000500"
std::string shard_file_name(int shard);        // "shard_00003.h5"
// The step of a committed directory name ("step_0000500" -> 500); nullopt for anything else
// (".tmp" directories included).
std::optional<std::int64_t> parse_step_dir_name(const std::string& name);

struct CommittedCheckpoint {
  std::int64_t step;
  std::filesystem::path path;
};

// Committed checkpoints in `dir`, ascending by step (empty when dir does not exist).
std::vector<CommittedCheckpoint> list_checkpoints(const std::filesystem::path& dir);

// What --resume names: a checkpoint directory (holds meta.h5) is itself; a run directory resolves
// through its `latest` link, or to its newest committed checkpoint when `latest` is missing or
// dangling. nullopt when `path` is a run directory without any checkpoint (or does not exist).
std::optional<std::filesystem::path> resolve_checkpoint(const std::filesystem::path& path);

// Points dir/latest at `step_dir` (a name inside dir) atomically and fsyncs dir.
void update_latest(const std::filesystem::path& dir, const std::string& step_dir);

// Removes step_*.tmp directories and .deleted_* directories (crash remains) from `dir`. Call only
// when no save is running.
void remove_stale_temporaries(const std::filesystem::path& dir);

// Deletes the checkpoint directory `checkpoint` (inside `dir`): renames it to dir/.deleted_<name>
// (durably), calls `after_rename` (tests stop there), then removes it. A crash part-way leaves
// either the whole checkpoint or a .deleted_ directory, never a half-deleted step_* directory.
// Throws CheckpointError(kIo) naming the path.
void discard_checkpoint(const std::filesystem::path& dir, const std::filesystem::path& checkpoint,
                        const std::function<void()>& after_rename = {});

// fsync of a file's data, and of a directory (so renames and new entries in it are durable).
// Throw CheckpointError(kIo) naming the path.
void fsync_path(const std::filesystem::path& path);
void fsync_directory(const std::filesystem::path& dir);

// Renames `from` to `to` (no directory may exist at `to`), then fsyncs to's parent.
void durable_rename(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace tessera
