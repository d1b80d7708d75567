// The export file a path names, for --init-from, tessera_eval and tessera_generate: an export file
// itself, or a Hugging Face model directory (save_pretrained's layout: model.safetensors with
// config.json beside it). A model split into shards is refused.
#pragma once

#include <filesystem>
#include <optional>

namespace tessera {

// `path` when it is a file; DIR/model.safetensors for a directory that holds one; nullopt for
// anything else (a missing path, a checkpoint directory). CheckpointError (kUnknownFormat) naming
// the index for a sharded safetensors model (a *.safetensors.index.json file, or a directory with
// model.safetensors.index.json and no model.safetensors), saying how to make it one file.
std::optional<std::filesystem::path> export_file_of(const std::filesystem::path& path);

}  // namespace tessera
