// What `tessera_ckpt info` prints about a checkpoint: step, progress, when it was written, the
// world size and sharding it was written with, precision, optimizer settings, loss scaler, the
// model and run config, parameter count and sizes (state and files) — and, by verify_checkpoint,
// whether every dataset's checksums hold.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tessera {

// `path`: a checkpoint directory or a run directory (its latest). Checks that every shard file is
// present with its recorded size. Throws CheckpointError.
std::string describe_checkpoint(const std::filesystem::path& path);

// Reads every dataset of every shard file in full and checks every chunk's XXH64. Returns the
// bytes checked. Throws CheckpointError naming the first corrupted file and dataset.
std::int64_t verify_checkpoint(const std::filesystem::path& path);

}  // namespace tessera
