// The full parameters of a saved checkpoint, read straight from its shard files (checksums
// verified) one unit at a time: what every export format writes. Runs in one process, no engine.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_layout.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/load/shard_file_reader.hpp"

namespace tessera {

class CheckpointParameters {
 public:
  // `checkpoint`: a checkpoint directory or a run directory (its latest). CheckpointError
  // (kMissingFile, kTruncatedFile, ...) naming the file when it cannot be read.
  explicit CheckpointParameters(const std::filesystem::path& checkpoint);

  const std::filesystem::path& dir() const { return dir_; }
  const CheckpointMeta& meta() const { return meta_; }
  // Every parameter, in the order for_each visits them (unit by unit, in each unit's layout order).
  std::vector<ParamRecord> in_order() const;
  // Calls `visit(record, values)` for each parameter of in_order(); values (numel) f32, row-major.
  void for_each(const std::function<void(const ParamRecord&, const std::vector<float>&)>& visit);

 private:
  std::filesystem::path dir_;
  CheckpointMeta meta_;
  std::vector<std::unique_ptr<ShardFileReader>> readers_;  // one per shard file
};

}  // namespace tessera
