// Retention (--keep-last K): which committed checkpoints of a run directory to delete after a save.
//
// Kept: the newest K; the one `latest` points at; and the newest checkpoint whose state came from
// a healthy step (meta.h5's `healthy`, format 3; older formats count as healthy) even when K newer
// ones were saved after non-finite steps — so a run that diverged still has its last good state on
// disk. Everything else is deleted through discard_checkpoint (renamed to .deleted_<name> first).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

namespace tessera {

// The newest committed checkpoint of `dir` whose state came from a healthy step; nullopt when none.
std::optional<std::filesystem::path> newest_healthy_checkpoint(const std::filesystem::path& dir);

// keep_last <= 0 keeps all. `after_rename` is called after each directory was renamed away and
// before it is removed (tests stop there). Returns the checkpoints removed. Throws
// CheckpointError(kIo).
std::vector<std::filesystem::path> apply_retention(const std::filesystem::path& dir, int keep_last,
                                                   const std::function<void()>& after_rename = {});

}  // namespace tessera
