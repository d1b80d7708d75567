// SafetensorsShards: the index's weight_map checked against every shard's header.
#include "tessera/checkpointing/export/safetensors_shards.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_safetensors_index(const fs::path& path) {
  return ends_with(path.filename().string(), ".safetensors.index.json");
}

bool is_safetensors_export(const fs::path& path) {
  return path.extension() == ".safetensors" || is_safetensors_index(path);
}

SafetensorsShards::SafetensorsShards(const fs::path& index) : index_(index) {
  const std::string where = index.string();
  std::ifstream in(index);
  if (!in) throw CheckpointError(CheckpointErrorKind::kMissingFile, where + " cannot be opened");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " is not JSON: " + e.what());
  }
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object() ||
      json["weight_map"].empty()) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + " has no \"weight_map\" object naming each tensor's shard file");
  }
  std::map<std::string, std::size_t> reader_of_file;
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!file.is_string()) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            where + ": weight_map[\"" + name + "\"] is not a file name");
    }
    const std::string shard = file.get<std::string>();
    if (shard.empty() || fs::path(shard).filename().string() != shard) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, where + ": weight_map[\"" + name + "\"] names \"" +
                                                                   shard + "\", not a file beside the index");
    }
    auto [at, inserted] = reader_of_file.emplace(shard, readers_.size());
    if (inserted) {
      const fs::path path = index.parent_path() / shard;
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) {
        throw CheckpointError(CheckpointErrorKind::kMissingFile,
                              where + " names the shard " + shard + ", which is not there (" + path.string() + ")");
      }
      readers_.push_back(std::make_unique<SafetensorsReader>(path));
      total_bytes_ += static_cast<std::int64_t>(fs::file_size(path));
    }
    if (!readers_[at->second]->contains(name)) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            where + " places " + name + " in " + shard + ", which does not hold it");
    }
    shard_of_[name] = at->second;
  }
}

const SafetensorsTensor& SafetensorsShards::tensor(const std::string& name) const {
  const auto at = shard_of_.find(name);
  if (at == shard_of_.end()) {
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch, index_.string() + " has no tensor " + name);
  }
  return readers_[at->second]->tensors().at(name);
}

std::vector<float> SafetensorsShards::read_f32(const std::string& name) {
  tensor(name);  // throws naming the index when absent
  return readers_[shard_of_.at(name)]->read_f32(name);
}

}  // namespace tessera
