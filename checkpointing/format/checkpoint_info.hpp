// What `tessera_ckpt info` prints about a checkpoint: step, progress, when it was written, the
// world size and sharding it was written with, precision, optimizer settings, loss scaler, the
// model and run config, parameter count and sizes (state and files), the effective configuration
// of the program that saved it (when recorded: every option and where it came from) — and, by verify_checkpoint,
// whether every dataset's checksums hold.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tessera {

// `path`: a checkpoint directory or a run directory (its latest). Checks that every shard file is
// present with its recorded size. Throws CheckpointError.
std::string describe_checkpoint(const std::filesystem::path& path);

struct VerifySummary {
  std::filesystem::path dir;  // the checkpoint directory checked
  std::int64_t step = 0;
  std::uint64_t save_id = 0;  // 0: format < 3
  int shard_files = 0;
  std::int64_t bytes = 0;  // of state read and checked
};

// Checks everything a checkpoint can prove about itself: meta.h5's recorded digests and layout
// structure, every shard file's presence, size, step and save id, and the XXH64 of every chunk of
// every dataset (read in full). Throws CheckpointError naming the first problem's file and value.
VerifySummary verify_checkpoint(const std::filesystem::path& path);

}  // namespace tessera
