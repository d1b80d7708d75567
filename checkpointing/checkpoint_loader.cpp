// Validation, the resharding read plan, and applying the state once every rank agreed.
#include "checkpointing/checkpoint_loader.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/meta_digests.hpp"
#include "checkpointing/rank_agreement.hpp"
#include "checkpointing/shard_file_reader.hpp"
#include "checkpointing/shard_file_writer.hpp"
#include "checkpointing/state_read_plan.hpp"
#include "sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// Host copies of every state tensor over a unit's optimizer range, in the tensors' dtypes (one
// value per elements_per_value elements). Not zero-filled: the reads cover the unit's parameters
// (or whole blocks); only what lies beyond is zeroed.
struct Staging {
  std::vector<std::unique_ptr<std::byte[]>> data;  // per state tensor
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

void check_same_save(const ShardFileReader& reader, const CheckpointMeta& meta, const std::string& meta_path) {
  const bool same_id = meta.format_version < 3 || reader.save_id() == meta.save_id;
  if (same_id && reader.step() == meta.progress.step) return;
  auto save = [](std::uint64_t id, std::int64_t step) {
    return (id != 0 ? "save " + detail::hex64(id) : std::string("a save without id")) + " of step " + std::to_string(step);
  };
  throw CheckpointError(CheckpointErrorKind::kCorruptData,
                        reader.path() + " does not belong to this checkpoint: it was written by " +
                            save(reader.save_id(), reader.step()) + ", but " + meta_path + " describes " +
                            save(meta.save_id, meta.progress.step) +
                            "; it was copied in from another checkpoint: put back this checkpoint's own file, or "
                            "resume from an earlier checkpoint");
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

    // Element-wise state by parameter name; block-quantized state by position (same units).
    const std::int64_t alignment = current.state_alignment;
    const StateReadPlan by_parameter = plan_reads_by_parameter(meta.layout, units);
    const StateReadPlan by_position = alignment > 1 ? plan_reads_by_position(meta.layout, units, alignment,
                                                                             meta_path.string())
                                                    : StateReadPlan{};
    auto plan_of = [&](std::size_t k) -> const StateReadPlan& {
      return k == 0 || alignment == 1 ? by_parameter : by_position;  // k 0: the f32 master, element-wise
    };
    for (std::size_t u = 0; u < units.size(); ++u) {
      const std::int64_t count = units[u]->optimizer_range().count;
      for (std::size_t k = 0; k < current.states.size(); ++k) {
        const StateSpec& spec = current.states[k];
        const std::size_t size = dtype_size(spec.dtype);
        const auto values = static_cast<std::size_t>(count / spec.elements_per_value);
        const auto covered = static_cast<std::size_t>(plan_of(k).covered[u] / spec.elements_per_value);
        auto& d = staging[u].data.emplace_back(new std::byte[values * size]);
        std::fill(d.get() + covered * size, d.get() + values * size, std::byte{0});
      }
    }
    std::set<int> shards;
    for (const StateReadPlan* p : {&by_parameter, &by_position}) {
      for (const auto& entry : p->reads) shards.insert(entry.first);
    }
    for (int shard : shards) {
      ShardFileReader reader((path / shard_file_name(shard)).string(), shard);
      check_same_save(reader, meta, meta_path.string());
      for (std::size_t k = 0; k < current.states.size(); ++k) {
        const StateSpec& spec = current.states[k];
        const auto found = plan_of(k).reads.find(shard);
        if (found == plan_of(k).reads.end()) continue;
        const std::int64_t per = spec.elements_per_value;
        for (const auto& [old_unit, requests] : found->second) {
          std::vector<ElementRange> ranges;
          for (const StateRequest& r : requests) {
            std::byte* base = staging[r.unit].data[k].get();
            ranges.push_back({r.begin / per, r.count / per, base + static_cast<std::size_t>(r.target / per) * dtype_size(spec.dtype)});
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
    FlatParamUnit& unit = *units[u];
    const std::vector<StateTensor> state = unit.state();
    const std::int64_t range = unit.optimizer_range().count;
    for (std::size_t k = 0; k < state.size(); ++k) {
      unit.write_state(k, 0, range / state[k].elements_per_value, staging[u].data[k].get());
    }
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
