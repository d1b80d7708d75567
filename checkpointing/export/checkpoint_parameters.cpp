// Full parameters from shard files: one read per shard piece of each unit's flat master buffer.
#include "tessera/checkpointing/export/checkpoint_parameters.hpp"

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"

namespace tessera {

CheckpointParameters::CheckpointParameters(const std::filesystem::path& checkpoint) {
  const auto dir = resolve_checkpoint(checkpoint);
  if (!dir) throw CheckpointError(CheckpointErrorKind::kMissingFile, "no checkpoint found at " + checkpoint.string());
  dir_ = *dir;
  meta_ = read_meta_file((dir_ / kMetaFileName).string());
  check_shard_files(meta_, dir_);
  for (int s = 0; s < meta_.layout.shard_ranks; ++s) {
    readers_.push_back(std::make_unique<ShardFileReader>((dir_ / shard_file_name(s)).string(), s));
    check_same_save(*readers_.back(), meta_, (dir_ / kMetaFileName).string());
  }
}

std::vector<ParamRecord> CheckpointParameters::in_order() const {
  std::vector<ParamRecord> order;
  for (std::size_t u = 0; u < meta_.layout.units.size(); ++u) {
    for (const ParamRecord& p : meta_.layout.params) {
      if (p.unit == static_cast<int>(u)) order.push_back(p);
    }
  }
  return order;
}

void CheckpointParameters::for_each(const std::function<void(const ParamRecord&, const std::vector<float>&)>& visit) {
  std::vector<float> flat, values;
  for (std::size_t u = 0; u < meta_.layout.units.size(); ++u) {
    const UnitRecord& unit = meta_.layout.units[u];
    flat.assign(static_cast<std::size_t>(unit.numel), 0.0f);
    std::int64_t at = 0;
    for (const ShardPiece& piece : meta_.layout.locate(static_cast<int>(u), 0, unit.numel)) {
      readers_[static_cast<std::size_t>(piece.shard)]->read(unit.name, kMasterDataset, DType::kF32,
                                                            {{piece.begin, piece.count, flat.data() + at}});
      at += piece.count;
    }
    for (const ParamRecord& p : meta_.layout.params) {
      if (p.unit != static_cast<int>(u)) continue;
      values.assign(flat.begin() + p.offset, flat.begin() + p.offset + p.numel());
      visit(p, values);
    }
  }
}

}  // namespace tessera
