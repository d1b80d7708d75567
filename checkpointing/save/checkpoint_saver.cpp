// Parallel shard writes and the atomic commit.
#include "tessera/checkpointing/save/checkpoint_saver.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/checkpointing/save/checkpoint_retention.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

// Every rank's words (variable length): the lengths, then every rank's words padded to the longest.
std::vector<std::vector<std::uint64_t>> all_gather_words(Communicator& comm, const std::vector<std::uint64_t>& mine) {
  const auto lengths = all_gather_values<std::int64_t>(comm, static_cast<std::int64_t>(mine.size()));
  const std::int64_t width = *std::max_element(lengths.begin(), lengths.end());
  std::vector<std::vector<std::uint64_t>> out(lengths.size());
  if (width == 0) return out;
  std::vector<std::uint64_t> padded(static_cast<std::size_t>(width), 0);
  std::copy(mine.begin(), mine.end(), padded.begin());
  const std::vector<std::uint64_t> all = all_gather_values(comm, std::span<const std::uint64_t>(padded));
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * padded.size());
    out[r].assign(first, first + lengths[r]);
  }
  return out;
}

void call_hook(const SaveOptions& options, SavePhase phase, std::int64_t step) {
  if (options.phase_hook) options.phase_hook(phase, step);
}

// A random nonzero 64-bit id, the same on every rank of `comm` (rank 0's).
std::uint64_t agree_on_save_id(Communicator& comm) {
  std::uint64_t id = 0;
  if (comm.rank() == 0) {
    std::random_device random;
    while (id == 0) id = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  }
  return broadcast_value(comm, id, 0);
}

// The whole layout of a tensor-parallel job: `mine` (this rank's, of_engine) with the units and
// pieces of the other group ranks, each taken from world rank t — group rank t of the first
// data-parallel position (the tensor-parallel mesh groups consecutive world ranks). Collective.
CheckpointLayout whole_layout(Communicator& comm, const CheckpointLayout& mine) {
  if (mine.tp <= 1) return mine;
  CheckpointLayout whole;
  for (int t = 0; t < mine.tp; ++t) {
    const std::string text = broadcast_string(comm, comm.rank() == t ? layout_to_json(mine) : "", t);
    CheckpointLayout rank_layout = comm.rank() == t ? mine : layout_from_json(text);
    const int rank_of_unit = rank_layout.units.empty() ? t : rank_layout.units.front().tp_rank;
    if (rank_of_unit != t) {
      throw CheckpointError(CheckpointErrorKind::kIo,
                            "world rank " + std::to_string(t) + " holds tensor-parallel rank " +
                                std::to_string(rank_of_unit) + "'s units, not rank " + std::to_string(t) +
                                "'s: a tensor-parallel checkpoint needs the groups of consecutive ranks "
                                "make_tensor_parallel_mesh makes");
    }
    if (t == 0) {
      whole = std::move(rank_layout);
    } else {
      whole.add_tensor_parallel_rank(rank_layout);
    }
  }
  return whole;
}

}  // namespace

SaveRequest prepare_save(ShardedEngine& engine, const fs::path& dir, const TrainingProgress& progress,
                         const RunConfig& config, ShardSnapshot snapshot) {
  engine.check_state_whole("a checkpoint save");
  SaveRequest request;
  request.dir = dir;
  CheckpointMeta& meta = request.meta;
  meta.format_version = kCheckpointFormatVersion;
  meta.progress = progress;
  meta.progress.rng_state.clear();
  meta.optimizer_steps = engine.optimizer_steps();
  meta.world_size =
      engine.world().size() * (engine.tensor_parallel_group() ? engine.tensor_parallel_group()->size() : 1);
  const ShardingConfig& sc = engine.config();
  meta.hybrid_group = sc.hybrid_group;
  meta.stage = sc.stage;
  meta.precision = sc.precision;
  meta.optimizer = sc.optimizer;
  meta.grad_clip = sc.grad_clip;
  if (const DynamicLossScaler* scaler = engine.loss_scaler()) meta.loss_scaler = scaler->state();
  meta.config = config;
  meta.layout = CheckpointLayout::of_engine(engine);
  request.rng_state = progress.rng_state;
  request.world_rank = engine.world().rank();
  Communicator* replicas = engine.replicate_group();
  const bool writer = replicas == nullptr || replicas->rank() == 0;
  // The files of tensor-parallel rank t are [t S, (t+1) S) (CheckpointLayout).
  const Communicator* tensor = engine.tensor_parallel_group();
  const int tp_rank = tensor != nullptr ? tensor->rank() : 0;
  request.shard = writer ? tp_rank * engine.shard_group().size() + engine.shard_group().rank() : -1;
  if (writer) request.snapshot = std::move(snapshot);
  return request;
}

namespace {

// Steps 1-4 of the save (see the header); throws on every rank when any rank failed.
SaveResult write_and_commit(Communicator& comm, const SaveRequest& request, const SaveOptions& options,
                            const fs::path& tmp_dir) {
  const fs::path final_dir = request.dir / step_dir_name(request.meta.progress.step);
  const bool root = comm.rank() == 0;
  SaveResult result;
  result.path = final_dir;
  result.step = request.meta.progress.step;

  CheckpointMeta meta = request.meta;
  meta.layout = whole_layout(comm, request.meta.layout);
  meta.rng_states = all_gather_words(comm, request.rng_state);
  meta.save_id = agree_on_save_id(comm);
  meta.health = options.health;

  // 1. The temporary directory, fresh.
  run_and_agree(comm, [&] {
    if (!root) return;
    std::error_code ec;
    fs::create_directories(request.dir, ec);
    if (ec)
      throw CheckpointError(CheckpointErrorKind::kIo, "cannot create " + request.dir.string() + ": " + ec.message());
    remove_stale_temporaries(request.dir);
    fs::create_directory(tmp_dir, ec);
    if (ec) throw CheckpointError(CheckpointErrorKind::kIo, "cannot create " + tmp_dir.string() + ": " + ec.message());
  });

  // 2. Shard files, in parallel.
  std::int64_t shard_bytes = 0;
  run_and_agree(comm, [&] {
    if (request.shard < 0) return;
    ShardWriteOptions write_options;
    write_options.compression = options.compression;
    write_options.chunk_elements = options.chunk_elements;
    if (options.phase_hook)
      write_options.after_first_dataset = [&] {
        options.phase_hook(SavePhase::kShardPartlyWritten, meta.progress.step);
      };
    shard_bytes = write_shard_file((tmp_dir / shard_file_name(request.shard)).string(), request.snapshot, request.shard,
                                   meta.layout.shard_ranks, meta.progress.step, meta.save_id, write_options);
  });
  result.bytes_written = shard_bytes;
  call_hook(options, SavePhase::kShardsWritten, meta.progress.step);
  const auto shards = all_gather_values<std::int64_t>(comm, request.shard);
  const auto sizes = all_gather_values<std::int64_t>(comm, shard_bytes);
  meta.shard_file_bytes.assign(static_cast<std::size_t>(meta.layout.shard_ranks), -1);
  for (std::size_t r = 0; r < shards.size(); ++r) {
    if (shards[r] >= 0) meta.shard_file_bytes[static_cast<std::size_t>(shards[r])] = sizes[r];
  }

  // 3. meta.h5, last.
  run_and_agree(comm, [&] {
    if (!root) return;
    for (std::size_t s = 0; s < meta.shard_file_bytes.size(); ++s) {
      if (meta.shard_file_bytes[s] < 0) {
        throw CheckpointError(CheckpointErrorKind::kIo,
                              "no rank wrote shard " + std::to_string(s) + " of " + tmp_dir.string());
      }
    }
    const fs::path meta_path = tmp_dir / kMetaFileName;
    write_meta_file(meta_path.string(), meta);
    fsync_directory(tmp_dir);
    result.bytes_written += static_cast<std::int64_t>(fs::file_size(meta_path));
  });
  call_hook(options, SavePhase::kMetaWritten, meta.progress.step);
  for (const std::int64_t bytes : meta.shard_file_bytes) result.checkpoint_bytes += bytes;
  result.checkpoint_bytes += broadcast_value<std::int64_t>(comm, root ? result.bytes_written - shard_bytes : 0, 0);

  // 4. Commit.
  run_and_agree(comm, [&] {
    if (!root) return;
    std::error_code ec;
    if (fs::exists(final_dir, ec)) {
      // Saving a step again (after resuming from an earlier checkpoint): the new one replaces it.
      const fs::path replaced = request.dir / (step_dir_name(meta.progress.step) + ".replaced.tmp");
      fs::remove_all(replaced, ec);
      durable_rename(final_dir, replaced);
    }
    durable_rename(tmp_dir, final_dir);
    call_hook(options, SavePhase::kCommitted, meta.progress.step);
    update_latest(request.dir, final_dir.filename().string());
    call_hook(options, SavePhase::kLatestUpdated, meta.progress.step);
    remove_stale_temporaries(request.dir);
    apply_retention(request.dir, options.keep_last,
                    [&] { call_hook(options, SavePhase::kRetentionRenamed, meta.progress.step); });
  });
  return result;
}

}  // namespace

SaveResult write_checkpoint(Communicator& comm, const SaveRequest& request, const SaveOptions& options) {
  const fs::path tmp_dir = request.dir / (step_dir_name(request.meta.progress.step) + ".tmp");
  const auto start = std::chrono::steady_clock::now();
  try {
    SaveResult result = write_and_commit(comm, request, options, tmp_dir);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const CheckpointError&) {
    // Every rank agreed on the failure, so none is still writing: free what the save took (a full
    // disk stays as full as before it).
    std::error_code ec;
    if (comm.rank() == 0) fs::remove_all(tmp_dir, ec);
    throw;
  }
}

SaveResult save_checkpoint(ShardedEngine& engine, Communicator& world, const fs::path& dir,
                           const TrainingProgress& progress, const RunConfig& config, const SaveOptions& options) {
  std::unique_ptr<HostStagingBuffer> staging;
  ShardSnapshot snapshot;
  if (ShardSnapshot::can_view(engine)) {
    snapshot = ShardSnapshot::view(engine);
  } else {
    staging = make_staging_buffer(engine, nullptr);
    snapshot = ShardSnapshot::copy(engine, *staging);
  }
  return write_checkpoint(world, prepare_save(engine, dir, progress, config, std::move(snapshot)), options);
}

}  // namespace tessera
