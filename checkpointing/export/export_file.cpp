// export_file_of: a file, a model directory's model.safetensors, or the refusal of a sharded model.
#include "tessera/checkpointing/export/export_file.hpp"

#include <string>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

[[noreturn]] void refuse_sharded_safetensors(const fs::path& index) {
  throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                        index.string() +
                            " indexes a safetensors model split into shards, which Tessera does not "
                            "read yet; merge the shards into one model.safetensors (save_pretrained "
                            "with a max_shard_size above the model's size) and pass that");
}

bool is_sharded_index(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string suffix = ".safetensors.index.json";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::optional<fs::path> export_file_of(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    if (is_sharded_index(path)) refuse_sharded_safetensors(path);
    return path;
  }
  if (!fs::is_directory(path, ec)) return std::nullopt;
  if (fs::is_regular_file(path / "model.safetensors", ec)) return path / "model.safetensors";
  if (fs::is_regular_file(path / "model.safetensors.index.json", ec)) {
    refuse_sharded_safetensors(path / "model.safetensors.index.json");
  }
  return std::nullopt;
}

}  // namespace tessera
