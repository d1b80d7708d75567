// Disk space for checkpoints: free bytes of a file system (statvfs), the check a run makes before
// training starts (the checkpoint directory is writable and has room for one checkpoint), and the
// rewording of a failed write on a full file system into what happened — "no space left on device",
// the file, the bytes it needed and the bytes free — instead of HDF5's internal error stack.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {

// Bytes an unprivileged process may still write on the file system holding `path` (statvfs
// f_bavail * f_frsize); -1 when it cannot be asked.
std::int64_t free_bytes(const std::filesystem::path& path);

// Creates `dir` when missing, checks that a file can be created in it, and that its file system has
// at least `bytes_needed` bytes free. Throws CheckpointError(kIo) naming the directory, and for
// space the bytes needed and free. Not collective.
void check_checkpoint_space(const std::filesystem::path& dir, std::int64_t bytes_needed);

// What a failed write of `path` (which needed about `bytes_needed` bytes) throws: when the file
// system is full (HDF5 or the OS said ENOSPC, or fewer bytes than needed are free), a kIo error
// "no space left on device: writing PATH needs N bytes, F free on its file system"; else `cause`.
CheckpointError explain_write_failure(const CheckpointError& cause, const std::filesystem::path& path,
                                      std::int64_t bytes_needed);

}  // namespace tessera
