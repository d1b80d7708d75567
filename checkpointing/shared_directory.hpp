// The checkpoint directory must be one directory for every rank: each rank writes its own shard
// file into it and a resume reads all of them. A node-local path (the same name on another disk on
// each node) would let a job train and "save" while most of its shards are on disks no resume will
// look at. check_directory_shared finds that before the first step: rank 0 writes a file with a
// fresh token into the directory and every rank reads it back.
#pragma once

#include <filesystem>

#include "tessera/comm/communicator.hpp"

namespace tessera {

// Collective over `world`. `dir` exists and is writable on rank 0 (the run directory lock made
// it). Throws SettingError("checkpoint.dir") on every rank when some rank cannot read rank 0's
// token file there within a few seconds (a file system's attribute cache may hide a new name for a
// moment), naming those ranks and their hosts and saying what to change.
void check_directory_shared(const std::filesystem::path& dir, Communicator& world);

}  // namespace tessera
