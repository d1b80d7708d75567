// Retention (--keep-last K): which committed checkpoints of a run directory to delete after a save.
//
// Kept: the newest K; the one `latest` points at; and the newest healthy checkpoint
// (checkpoint_is_healthy: meta.h5's `healthy` and no unhealthy.txt) even when K newer ones were
// saved after steps that were not — so a run that diverged still has its last good state on disk.
// The newest checkpoint's health is confirmed only by the step after it (health_mark.hpp), so while
// the newest healthy checkpoint is the newest of all, the healthy one before it is kept too
// (--keep-last 1 keeps two then). Everything else is deleted through discard_checkpoint (renamed to
// .deleted_<name> first).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

namespace tessera {

// The newest committed checkpoint of `dir` that is healthy (checkpoint_is_healthy); nullopt when none.
std::optional<std::filesystem::path> newest_healthy_checkpoint(const std::filesystem::path& dir);

// keep_last <= 0 keeps all. `after_rename` is called after each directory was renamed away and
// before it is removed (tests stop there). Returns the checkpoints removed. Throws
// CheckpointError(kIo).
std::vector<std::filesystem::path> apply_retention(const std::filesystem::path& dir, int keep_last,
                                                   const std::function<void()>& after_rename = {});

}  // namespace tessera
