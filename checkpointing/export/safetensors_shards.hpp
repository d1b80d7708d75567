// A safetensors model split into shards, as save_pretrained writes a large model:
// model.safetensors.index.json ({"weight_map": {"tensor name": "model-00001-of-00002.safetensors",
// ...}}) beside the shard files. Read tensor by tensor, each from the shard the index names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/checkpointing/export/safetensors_file.hpp"

namespace tessera {

// True for "*.safetensors" and for a shard index "*.safetensors.index.json".
bool is_safetensors_export(const std::filesystem::path& path);
bool is_safetensors_index(const std::filesystem::path& path);

class SafetensorsShards {
 public:
  // Reads the index and every shard's header. CheckpointError naming the index or the shard: JSON
  // that does not parse, no "weight_map" object, a shard file outside the index's directory or
  // missing, a tensor the index places in a shard that does not hold it (kCorruptData/kMissingFile).
  explicit SafetensorsShards(const std::filesystem::path& index);

  bool contains(const std::string& name) const { return shard_of_.count(name) != 0; }
  const SafetensorsTensor& tensor(const std::string& name) const;
  // The whole tensor as f32 (as SafetensorsReader::read_f32).
  std::vector<float> read_f32(const std::string& name);
  // The shard files' bytes together.
  std::int64_t total_bytes() const { return total_bytes_; }

 private:
  std::filesystem::path index_;
  std::map<std::string, std::size_t> shard_of_;  // tensor name -> readers_ index
  std::vector<std::unique_ptr<SafetensorsReader>> readers_;
  std::int64_t total_bytes_ = 0;
};

}  // namespace tessera
