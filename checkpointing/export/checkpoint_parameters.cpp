// Full parameters from shard files: one read per shard piece of each unit's flat master buffer.
#include "tessera/checkpointing/export/checkpoint_parameters.hpp"

#include <algorithm>
#include <map>

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

namespace {

// A parameter as a whole tensor: the record of group rank 0's unit with the whole shape.
ParamRecord whole(const ParamRecord& p) {
  ParamRecord out = p;
  out.shape = p.full_shape();
  out.slice = TensorSlice{};
  return out;
}

}  // namespace

std::vector<ParamRecord> CheckpointParameters::in_order() const {
  // Unit by unit of tensor-parallel rank 0 (the other ranks' units hold more pieces of the same
  // parameters), each in its layout order: the order of a checkpoint without tensor parallelism.
  std::vector<ParamRecord> order;
  for (std::size_t u = 0; u < meta_.layout.units.size(); ++u) {
    if (meta_.layout.units[u].tp_rank != 0) continue;
    for (const ParamRecord& p : meta_.layout.params) {
      if (p.unit == static_cast<int>(u)) order.push_back(whole(p));
    }
  }
  return order;
}

void CheckpointParameters::for_each(const std::function<void(const ParamRecord&, const std::vector<float>&)>& visit) {
  const CheckpointLayout& layout = meta_.layout;
  std::map<int, std::vector<float>> flats;  // the master of each unit read for the current one
  auto flat_of = [&](int u) -> const std::vector<float>& {
    auto found = flats.find(u);
    if (found != flats.end()) return found->second;
    const UnitRecord& unit = layout.units[static_cast<std::size_t>(u)];
    std::vector<float> flat(static_cast<std::size_t>(unit.numel), 0.0f);
    std::int64_t at = 0;
    for (const ShardPiece& piece : layout.locate(u, 0, unit.numel)) {
      readers_[static_cast<std::size_t>(piece.shard)]->read(unit.name, kMasterDataset, DType::kF32,
                                                            {{piece.begin, piece.count, flat.data() + at}});
      at += piece.count;
    }
    return flats.emplace(u, std::move(flat)).first->second;
  };
  std::vector<float> values;
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    if (layout.units[u].tp_rank != 0) continue;
    flats.clear();
    for (const ParamRecord& p : layout.params) {
      if (p.unit != static_cast<int>(u)) continue;
      const ParamRecord record = whole(p);
      values.assign(static_cast<std::size_t>(record.numel()), 0.0f);
      // Every piece (the record itself when not split) into its place in the whole tensor.
      for (const ParamRecord* piece :
           p.slice.split() ? layout.pieces_of(p.name) : std::vector<const ParamRecord*>{&p}) {
        const std::vector<float>& flat = flat_of(piece->unit);
        for_each_global_run(piece->shape, piece->slice, 0, piece->numel(),
                            [&](std::int64_t global, std::int64_t local, std::int64_t count) {
                              std::copy_n(flat.begin() + piece->offset + local, count, values.begin() + global);
                            });
      }
      visit(record, values);
    }
  }
}

}  // namespace tessera
