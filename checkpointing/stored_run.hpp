// What a program that only runs a trained model (tessera_generate) needs to know before it builds
// the model: the stored RunConfig of a checkpoint directory, a run directory (its latest) or an
// export file of `tessera_ckpt export`, and the GPT shape in it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "checkpointing/run_config.hpp"
#include "runtime/modules/gpt.hpp"

namespace tessera {

struct StoredRun {
  RunConfig config;
  std::optional<std::filesystem::path> checkpoint;  // the checkpoint directory; nullopt for an export file
};

// A directory resolves as --resume does (checkpoint_paths.hpp); a file is read as an HDF5 export
// (its /config). Throws CheckpointError: kMissingFile when nothing is there, kUnknownFormat for a
// file that is not an HDF5 export.
StoredRun read_stored_run(const std::filesystem::path& path);

// The GPT of the model fields (vocab_size, max_seq_len, layers, heads, channels). Throws
// CheckpointError(kConfigMismatch) naming `where` and the missing field.
GptConfig gpt_config_of(const RunConfig& config, const std::string& where);

}  // namespace tessera
