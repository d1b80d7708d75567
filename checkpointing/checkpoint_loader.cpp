// Validation, the resharding read plan, the verifying pass over every chunk, and the pass that
// reads the state into the engine once every rank agreed.
#include "checkpointing/checkpoint_loader.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
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

// One dataset this rank reads from a shard file: state `state` of the old unit `old_unit`, into
// the element runs `requests` (targets in the new units' optimizer ranges, in elements).
struct DatasetRead {
  const std::string* old_unit;
  std::size_t state;
  const std::vector<StateRequest>* requests;
};

// Per shard file this rank needs (ascending), the datasets it reads there in reading order.
struct FileReads {
  std::vector<int> shards;
  std::vector<std::vector<DatasetRead>> reads;
};

// The element ranges of one dataset read; `base(unit)` is where the new unit's values of the state
// begin (null: nothing is kept).
std::vector<ElementRange> ranges_of(const DatasetRead& r, const StateSpec& spec,
                                    const std::function<std::byte*(std::size_t unit)>& base) {
  const std::int64_t per = spec.elements_per_value;
  std::vector<ElementRange> ranges;
  for (const StateRequest& q : *r.requests) {
    std::byte* b = base ? base(q.unit) : nullptr;
    ranges.push_back({q.begin / per, q.count / per,
                      b == nullptr ? nullptr : b + static_cast<std::size_t>(q.target / per) * dtype_size(spec.dtype)});
  }
  return ranges;
}

// Opens every shard file in order, checks it belongs to the save `meta` describes, and calls
// `each(reader, file index)`.
void for_each_file(const fs::path& dir, const FileReads& files, const CheckpointMeta& meta,
                   const std::string& meta_path, const std::function<void(ShardFileReader&, std::size_t)>& each) {
  for (std::size_t f = 0; f < files.shards.size(); ++f) {
    ShardFileReader reader((dir / shard_file_name(files.shards[f])).string(), files.shards[f]);
    check_same_save(reader, meta, meta_path);
    each(reader, f);
  }
}

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
  const fs::path meta_path = path / kMetaFileName;
  CheckpointLayout current;
  StateReadPlan by_parameter, by_position;
  FileReads files;
  auto plan_of = [&](std::size_t k) -> const StateReadPlan& {
    return k == 0 || current.state_alignment == 1 ? by_parameter : by_position;  // k 0: the f32 master, element-wise
  };

  // Pass 1: everything is checked, and every chunk this rank needs is read from the disk and its
  // checksum verified (through one reused buffer per thread: nothing is kept but what the disk
  // leaves in the page cache), before any rank changes its engine.
  run_and_agree(world, [&] {
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
    current = CheckpointLayout::of_engine(engine);
    check_same_parameters(meta.layout, current, meta_path.string());
    check_same_states(meta.layout, current, meta_path.string());
    check_shard_files(meta, path);

    // Element-wise state by parameter name; block-quantized state by position (same units).
    const std::int64_t alignment = current.state_alignment;
    by_parameter = plan_reads_by_parameter(meta.layout, units);
    if (alignment > 1) by_position = plan_reads_by_position(meta.layout, units, alignment, meta_path.string());
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
    }
    for_each_file(path, files, meta, meta_path.string(), [&](ShardFileReader& reader, std::size_t f) {
      for (const DatasetRead& r : files.reads[f]) {
        const StateSpec& spec = current.states[r.state];
        reader.verify(*r.old_unit, spec.name, spec.dtype, ranges_of(r, spec, nullptr));
      }
      result.bytes_read += reader.bytes_read();
    });
  });

  // Pass 2: every rank verified its part; now the engine changes. The same chunks (from the page
  // cache, unless evicted) go straight into the state tensors when they are host memory, else
  // through host buffers and write_state; their checksums are checked again, so a file changed
  // since pass 1 is still refused (on every rank — but the engine then holds part of it).
  run_and_agree(world, [&] {
    std::vector<std::vector<std::byte*>> base(units.size());           // [unit][state]
    std::vector<std::vector<std::unique_ptr<std::byte[]>>> staging(units.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
      std::vector<StateTensor> state = units[u]->state();
      const std::int64_t count = units[u]->optimizer_range().count;
      for (std::size_t k = 0; k < state.size(); ++k) {
        const StateSpec& spec = current.states[k];
        const std::size_t size = dtype_size(spec.dtype);
        const auto values = static_cast<std::size_t>(count / spec.elements_per_value);
        const auto covered = static_cast<std::size_t>(plan_of(k).covered[u] / spec.elements_per_value);
        Tensor& t = state[k].tensor;
        const bool host = t.defined() && t.device().memory_space() == MemorySpace::kHost;
        staging[u].emplace_back(host ? nullptr : new std::byte[values * size]);
        std::byte* b = host ? static_cast<std::byte*>(t.data()) : staging[u].back().get();
        // The reads cover the unit's parameters (or whole blocks); what lies beyond is zero.
        std::memset(b + covered * size, 0, (values - covered) * size);
        base[u].push_back(b);
      }
    }
    for_each_file(path, files, result.meta, meta_path.string(), [&](ShardFileReader& reader, std::size_t f) {
      for (const DatasetRead& r : files.reads[f]) {
        const StateSpec& spec = current.states[r.state];
        reader.read(*r.old_unit, spec.name, spec.dtype,
                    ranges_of(r, spec, [&](std::size_t u) { return base[u][r.state]; }));
      }
    });
    for (std::size_t u = 0; u < units.size(); ++u) {
      const std::int64_t count = units[u]->optimizer_range().count;
      for (std::size_t k = 0; k < staging[u].size(); ++k) {
        if (staging[u][k]) units[u]->write_state(k, 0, count / current.states[k].elements_per_value, staging[u][k].get());
      }
    }
  });

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
