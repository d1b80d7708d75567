// Validation of everything but the data (all ranks agree), the resharding read plan, then one pass
// over the chunks straight into the state, verified as they arrive (an optional verifying pass first).
#include "tessera/checkpointing/load/checkpoint_loader.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/checkpointing/load/shard_file_reader.hpp"
#include "tessera/checkpointing/load/state_read_plan.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// One dataset this rank reads from a shard file: state `state` of the old unit `old_unit`, into
// the element runs `requests` (targets in the new units' optimizer ranges, in elements).
struct DatasetRead {
  const std::string* old_unit;
  std::size_t state;
  const std::vector<StateRequest>* requests;
};

// Per shard file this rank needs (ascending), the datasets it reads there.
struct FileReads {
  std::vector<int> shards;
  std::vector<std::vector<DatasetRead>> reads;
};

// The ranges of every dataset read of one file; `base(unit, state)` is where the new unit's values
// of the state begin (null: nothing is kept, a verifying read).
std::vector<DatasetRanges> ranges_of(const std::vector<DatasetRead>& reads, const std::vector<StateSpec>& specs,
                                     const std::function<std::byte*(std::size_t unit, std::size_t state)>& base) {
  std::vector<DatasetRanges> out;
  for (const DatasetRead& r : reads) {
    const StateSpec& spec = specs[r.state];
    const std::int64_t per = spec.elements_per_value;
    DatasetRanges& d = out.emplace_back(DatasetRanges{*r.old_unit, spec.name, spec.dtype, {}});
    for (const StateRequest& q : *r.requests) {
      std::byte* b = base ? base(q.unit, r.state) : nullptr;
      d.ranges.push_back(
          {q.begin / per, q.count / per,
           b == nullptr ? nullptr : b + static_cast<std::size_t>(q.target / per) * dtype_size(spec.dtype)});
    }
  }
  return out;
}

// Where each new unit's values of each state are read to: the state tensor itself when it is host
// memory, else a host buffer handed to write_state once every rank read its part (finish()). The
// values beyond what the reads cover (padding) are zeroed.
class ReadTargets {
 public:
  ReadTargets(const std::vector<std::unique_ptr<FlatParamUnit>>& units, const std::vector<StateSpec>& specs,
              const std::function<std::int64_t(std::size_t unit, std::size_t state)>& covered)
      : units_(units), specs_(specs), base_(units.size()), staging_(units.size()) {
    for (std::size_t u = 0; u < units.size(); ++u) {
      std::vector<StateTensor> state = units[u]->state();
      const std::int64_t count = units[u]->optimizer_range().count;
      for (std::size_t k = 0; k < state.size(); ++k) {
        const std::size_t size = dtype_size(specs[k].dtype);
        const auto values = static_cast<std::size_t>(count / specs[k].elements_per_value);
        const auto kept = static_cast<std::size_t>(covered(u, k) / specs[k].elements_per_value);
        Tensor& t = state[k].tensor;
        const bool host = t.defined() && t.device().memory_space() == MemorySpace::kHost;
        staging_[u].emplace_back(host ? nullptr : new std::byte[values * size]);
        std::byte* b = host ? static_cast<std::byte*>(t.data()) : staging_[u].back().get();
        std::memset(b + kept * size, 0, (values - kept) * size);
        base_[u].push_back(b);
      }
    }
  }
  std::byte* base(std::size_t unit, std::size_t state) const { return base_[unit][state]; }
  // Hands the host buffers of state outside host memory to the units.
  void finish() {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const std::int64_t count = units_[u]->optimizer_range().count;
      for (std::size_t k = 0; k < staging_[u].size(); ++k) {
        if (staging_[u][k]) units_[u]->write_state(k, 0, count / specs_[k].elements_per_value, staging_[u][k].get());
      }
    }
  }

 private:
  const std::vector<std::unique_ptr<FlatParamUnit>>& units_;
  const std::vector<StateSpec>& specs_;
  std::vector<std::vector<std::byte*>> base_;                       // [unit][state]
  std::vector<std::vector<std::unique_ptr<std::byte[]>>> staging_;  // [unit][state], null: in place
};

}  // namespace

void check_shard_files(const CheckpointMeta& meta, const fs::path& dir) {
  for (int s = 0; s < meta.layout.shard_ranks; ++s) {
    const fs::path file = dir / shard_file_name(s);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            file.string() + " is missing (the checkpoint has " +
                                std::to_string(meta.layout.shard_ranks) +
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
  const bool same_id = reader.save_id() == meta.save_id;
  if (same_id && reader.step() == meta.progress.step) return;
  auto save = [](std::uint64_t id, std::int64_t step) {
    return (id != 0 ? "save " + detail::hex64(id) : std::string("a save without id")) + " of step " +
           std::to_string(step);
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

LoadResult load_checkpoint(ShardedEngine& engine, Communicator& world, const fs::path& path, const RunConfig& expected,
                           const LoadOptions& options) {
  LoadResult result;
  const auto& units = engine.units();
  const fs::path meta_path = path / kMetaFileName;
  CheckpointLayout current;
  StateReadPlan by_parameter, by_position;
  FileReads files;
  std::vector<std::unique_ptr<ShardFileReader>> readers;  // per file of `files`
  std::int64_t verified_bytes = 0;                        // read by the verifying pass
  auto plan_of = [&](std::size_t k) -> const StateReadPlan& {
    return k == 0 || current.state_alignment == 1 ? by_parameter : by_position;  // k 0: the f32 master, element-wise
  };
  auto read_all = [&](const std::function<std::byte*(std::size_t, std::size_t)>& base) {
    for (std::size_t f = 0; f < readers.size(); ++f) {
      const std::vector<DatasetRanges> reads = ranges_of(files.reads[f], current.states, base);
      if (base) {
        readers[f]->read(reads);
      } else {
        readers[f]->verify(reads);
      }
    }
  };

  // Everything but the data is checked, on every rank, and every rank agrees, before any state
  // changes: the metadata, the model, the layout, every shard file's presence, size and save id.
  run_and_agree(world, [&] {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            "checkpoint directory " + path.string() + " does not exist");
    }
    if (!fs::is_regular_file(meta_path, ec)) {
      throw CheckpointError(CheckpointErrorKind::kMissingFile,
                            meta_path.string() + " is missing: " + path.string() + " is not a complete checkpoint");
    }
    result.meta = read_meta_file(meta_path.string());
    const CheckpointMeta& meta = result.meta;
    check_model_fields(meta.config, expected, meta_path.string());
    current = CheckpointLayout::of_engine(engine);
    check_same_parameters(meta.layout, current, meta_path.string());
    check_same_states(meta.layout, current, meta_path.string());
    check_shard_files(meta, path);

    // Element-wise state by parameter name; block-quantized state by position (same units).
    const std::int64_t alignment = current.state_alignment;
    by_parameter = plan_reads_by_parameter(meta.layout, units);
    if (alignment > 1) {
      const Communicator* tensor = engine.tensor_parallel_group();
      by_position = plan_reads_by_position(meta.layout, units, alignment, meta_path.string(),
                                           tensor != nullptr ? tensor->rank() : 0, current.tp);
    }
    std::set<int> shards;
    for (const StateReadPlan* p : {&by_parameter, &by_position}) {
      for (const auto& entry : p->reads) shards.insert(entry.first);
    }
    files.shards.assign(shards.begin(), shards.end());
    for (int shard : files.shards) {
      auto& reads = files.reads.emplace_back();
      for (std::size_t k = 0; k < current.states.size(); ++k) {
        const auto found = plan_of(k).reads.find(shard);
        if (found == plan_of(k).reads.end()) continue;
        for (const auto& [old_unit, requests] : found->second) {
          reads.push_back({&meta.layout.units[static_cast<std::size_t>(old_unit)].name, k, &requests});
        }
      }
      readers.push_back(std::make_unique<ShardFileReader>((path / shard_file_name(shard)).string(), shard));
      check_same_save(*readers.back(), meta, meta_path.string());
    }
    if (!options.verify_before_writing) return;
    read_all(nullptr);
    for (const auto& reader : readers) verified_bytes += reader->bytes_read();
  });

  // The data: every chunk this rank needs, straight into the state (host memory; other memory
  // through host buffers, handed over once every rank read its part), each verified as it arrives.
  // Refused here, the host state holds part of the checkpoint: the engine is marked until a load
  // completes. With verify_before_writing every chunk was verified already and is read again (from
  // the page cache); only a file changed in between is refused here.
  const std::string partial = "the state was partly overwritten by a refused load of " + path.string() +
                              "; load a checkpoint that verifies, or construct the engine anew";
  engine.mark_state_partial(partial);
  std::optional<ReadTargets> targets;
  run_and_agree(world, [&] {
    targets.emplace(units, current.states, [&](std::size_t u, std::size_t k) { return plan_of(k).covered[u]; });
    read_all([&](std::size_t u, std::size_t k) { return targets->base(u, k); });
  });
  targets->finish();
  targets.reset();
  for (const auto& reader : readers) result.bytes_read += reader->bytes_read();
  result.bytes_read -= verified_bytes;
  readers.clear();
  engine.mark_state_whole();

  engine.set_optimizer_steps(result.meta.optimizer_steps);
  if (DynamicLossScaler* scaler = engine.loss_scaler(); scaler != nullptr && result.meta.loss_scaler) {
    scaler->set_state(*result.meta.loss_scaler);
  }
  engine.publish_parameters();
  result.progress = result.meta.progress;
  const auto rank = static_cast<std::size_t>(world.rank());
  result.progress.rng_state =
      rank < result.meta.rng_states.size() ? result.meta.rng_states[rank] : std::vector<std::uint64_t>{};
  return result;
}

}  // namespace tessera
