// export_file_of: a file, or a model directory's model.safetensors or shard index.
#include "tessera/checkpointing/export/export_file.hpp"

namespace fs = std::filesystem;

namespace tessera {

std::optional<fs::path> export_file_of(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (!fs::is_directory(path, ec)) return std::nullopt;
  if (fs::is_regular_file(path / "model.safetensors", ec)) return path / "model.safetensors";
  if (fs::is_regular_file(path / "model.safetensors.index.json", ec)) return path / "model.safetensors.index.json";
  return std::nullopt;
}

}  // namespace tessera
