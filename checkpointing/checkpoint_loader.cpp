// Validation, the resharding read plan, and applying the state once every rank agreed.
#include "checkpointing/checkpoint_loader.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/rank_agreement.hpp"
#include "checkpointing/shard_file_reader.hpp"
#include "checkpointing/shard_file_writer.hpp"
#include "sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// Where a run of a new unit's optimizer range comes from: an old (shard, unit) dataset range.
struct Request {
  std::int64_t begin;    // in the old shard's dataset
  std::int64_t count;
  std::size_t unit;      // new unit index
  std::int64_t target;   // element in the new unit's staging (optimizer range)
};

// Host copies of every state tensor over a unit's optimizer range, in the tensors' dtypes. Not
// zero-filled: the reads cover every element below the unit's numel; only the padding after it is
// zeroed.
struct Staging {
  std::vector<std::unique_ptr<std::byte[]>> data;  // per state tensor
  std::int64_t count = 0;
};

}  // namespace

void check_shard_files(const CheckpointMeta& meta, const fs::path& dir) {
  for (int s = 0; s < meta.layout.shard_ranks; ++s) {
    const fs::path file = dir / shard_file_name(s);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            file.string() + " is missing (the checkpoint has " + std::to_string(meta.layout.shard_ranks) +
                                " shard files); restore it or resume from an earlier checkpoint");
    }
    const auto size = static_cast<std::int64_t>(fs::file_size(file, ec));
    const std::int64_t expected = meta.shard_file_bytes[static_cast<std::size_t>(s)];
    if (ec || size != expected) {
      throw CheckpointError(CheckpointErrorKind::kTruncatedFile,
                            file.string() + " has " + std::to_string(size) + " bytes but " + std::to_string(expected) +
                                " were written: the file is " + (size < expected ? "truncated" : "altered") +
                                "; resume from an earlier checkpoint");
    }
  }
}

void check_model_fields(const RunConfig& stored, const RunConfig& expected, const std::string& where) {
  for (const auto& [key, value] : expected.model()) {
    auto it = stored.model().find(key);
    if (it == stored.model().end() || it->second == value) continue;
    throw CheckpointError(CheckpointErrorKind::kConfigMismatch,
                          where + " was written for a model with " + key + " = " + it->second + ", this run has " +
                              key + " = " + value + "; use the checkpoint's model options or start a new run");
  }
}

LoadResult load_checkpoint(ShardedEngine& engine, Communicator& world, const fs::path& path,
                           const RunConfig& expected) {
  LoadResult result;
  const auto& units = engine.units();
  std::vector<Staging> staging(units.size());
  run_and_agree(world, [&] {
    const fs::path meta_path = path / kMetaFileName;
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile, "checkpoint directory " + path.string() + " does not exist");
    }
    if (!fs::is_regular_file(meta_path, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            meta_path.string() + " is missing: " + path.string() + " is not a complete checkpoint");
    }
    result.meta = read_meta_file(meta_path.string());
    const CheckpointMeta& meta = result.meta;
    check_model_fields(meta.config, expected, meta_path.string());
    const CheckpointLayout current = CheckpointLayout::of_engine(engine);
    check_same_parameters(meta.layout, current, meta_path.string());
    check_same_states(meta.layout, current, meta_path.string());
    check_shard_files(meta, path);

    // The read plan: per old shard file, per old unit, the ranges and where they go.
    std::map<int, std::map<int, std::vector<Request>>> plan;
    for (std::size_t u = 0; u < units.size(); ++u) {
      const FlatParamUnit& unit = *units[u];
      const FlatRange range = unit.optimizer_range();
      const std::int64_t begin = range.begin, end = range.end();
      staging[u].count = range.count;
      const std::int64_t padding_from = std::clamp(unit.layout().numel() - begin, std::int64_t{0}, range.count);
      for (const StateSpec& spec : current.states) {
        const std::size_t size = dtype_size(spec.dtype);
        auto& d = staging[u].data.emplace_back(new std::byte[static_cast<std::size_t>(range.count) * size]);
        std::fill(d.get() + static_cast<std::size_t>(padding_from) * size,
                  d.get() + static_cast<std::size_t>(range.count) * size, std::byte{0});
      }
      for (const FlatEntry& e : unit.layout().entries()) {
        const std::int64_t lo = std::max(begin, e.offset), hi = std::min(end, e.offset + e.numel);
        if (lo >= hi) continue;
        const ParamRecord& old = *meta.layout.find_param(e.name);
        std::int64_t target = lo - begin;
        for (const ShardPiece& piece : meta.layout.locate(old.unit, old.offset + (lo - e.offset), old.offset + (hi - e.offset))) {
          auto& requests = plan[piece.shard][old.unit];
          Request* last = requests.empty() ? nullptr : &requests.back();
          if (last != nullptr && last->unit == u && last->begin + last->count == piece.begin &&
              last->target + last->count == target) {
            last->count += piece.count;  // contiguous in both layouts: one read
          } else {
            requests.push_back({piece.begin, piece.count, u, target});
          }
          target += piece.count;
        }
      }
    }
    for (const auto& [shard, by_unit] : plan) {
      ShardFileReader reader((path / shard_file_name(shard)).string(), shard);
      for (const auto& [old_unit, requests] : by_unit) {
        for (std::size_t k = 0; k < current.states.size(); ++k) {
          const StateSpec& spec = current.states[k];
          std::vector<ElementRange> ranges;
          for (const Request& r : requests) {
            std::byte* base = staging[r.unit].data[k].get();
            ranges.push_back({r.begin, r.count, base + static_cast<std::size_t>(r.target) * dtype_size(spec.dtype)});
          }
          reader.read(meta.layout.units[static_cast<std::size_t>(old_unit)].name, spec.name, spec.dtype,
                      std::move(ranges));
        }
      }
      result.bytes_read += reader.bytes_read();
    }
  });

  // Every rank validated and read its part: now change the engine.
  for (std::size_t u = 0; u < units.size(); ++u) {
    std::vector<StateTensor> state = engine.unit_state(static_cast<int>(u));
    for (std::size_t k = 0; k < state.size(); ++k) state[k].tensor.copy_from_host_bytes(staging[u].data[k].get());
  }
  engine.set_optimizer_steps(result.meta.optimizer_steps);
  if (DynamicLossScaler* scaler = engine.loss_scaler(); scaler != nullptr && result.meta.loss_scaler) {
    scaler->set_state(*result.meta.loss_scaler);
  }
  engine.publish_parameters();
  result.progress = result.meta.progress;
  const auto rank = static_cast<std::size_t>(world.rank());
  result.progress.rng_state = rank < result.meta.rng_states.size() ? result.meta.rng_states[rank] : std::vector<std::uint64_t>{};
  return result;
}

}  // namespace tessera
