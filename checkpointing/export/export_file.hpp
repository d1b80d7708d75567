// The export file a path names, for --init-from, tessera_eval and tessera_generate: an export file
// itself, or a Hugging Face model directory (save_pretrained's layout: model.safetensors with
// config.json beside it, or a model split into shards: model.safetensors.index.json and its shard
// files).
#pragma once

#include <filesystem>
#include <optional>

namespace tessera {

// `path` when it is a file; DIR/model.safetensors for a directory that holds one, else
// DIR/model.safetensors.index.json when it holds that; nullopt for anything else (a missing path,
// a checkpoint directory).
std::optional<std::filesystem::path> export_file_of(const std::filesystem::path& path);

}  // namespace tessera
