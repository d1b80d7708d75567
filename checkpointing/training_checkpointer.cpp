// TrainingCheckpointer: resume, periodic and signal-driven saves, async writer thread.
#include "tessera/checkpointing/training_checkpointer.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/tokenizer_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/health_mark.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/rank_agreement.hpp"
#include "tessera/checkpointing/resume_target.hpp"
#include "tessera/checkpointing/run_directory_lock.hpp"
#include "tessera/checkpointing/save/checkpoint_retention.hpp"
#include "tessera/checkpointing/save/disk_space.hpp"
#include "tessera/checkpointing/shared_directory.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/core/warning.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/text/tokenizer/tokenizer_match.hpp"

namespace fs = std::filesystem;

namespace tessera {

TrainingCheckpointer::TrainingCheckpointer(CheckpointOptions options, ShardedEngine& engine, Communicator& world,
                                           RunConfig config)
    : options_(std::move(options)), engine_(engine), world_(world), config_(std::move(config)) {
  if (options_.save_every < 0) {
    throw SettingError("checkpoint.save_every", std::to_string(options_.save_every),
                       "must be >= 0 (0: no periodic saves)");
  }
  if (options_.keep_last < 0) {
    throw SettingError("checkpoint.keep_last", std::to_string(options_.keep_last), "must be >= 0 (0: keep all)");
  }
  if (options_.dir.empty() && (options_.save_every > 0 || options_.resume == "auto")) {
    throw SettingError("checkpoint.dir", "(none)",
                       "periodic saves and resuming from the latest checkpoint need a "
                       "checkpoint directory");
  }
  save_comm_ = world_.split(0, world_.rank());
  if (!options_.dir.empty()) {
    lock_directory();
    check_directory_shared(options_.dir, world_);
    prepare_directory();
  }
  if (options_.handle_signals) signals_ = std::make_unique<StopSignalHandler>();
  if (options_.mode == SaveMode::kAsync && !options_.dir.empty()) {
    staging_ = make_staging_buffer(engine_, host_memory_tracker(engine_));
    staging_->reserve(ShardSnapshot::bytes_needed(engine_));
  }
}

TrainingCheckpointer::~TrainingCheckpointer() {
  if (writer_.joinable()) writer_.join();
}

void TrainingCheckpointer::lock_directory() {
  run_and_agree(world_, [&] {
    if (world_.rank() != 0) return;
    lock_ = std::make_unique<RunDirectoryLock>(fs::path(options_.dir));
    if (const auto& gone = lock_->previous_holder()) {
      warn(world_.rank(), options_.dir + ": the job that held this directory (" + *gone +
                              ") ended without releasing it; this job takes it over");
    }
  });
}

void TrainingCheckpointer::prepare_directory() {
  const fs::path dir(options_.dir);
  std::string refusal;  // rank 0 looks, every rank follows
  if (options_.resume.empty() && world_.rank() == 0) {
    const auto found = list_checkpoints(dir);
    if (!found.empty() && options_.existing == ExistingCheckpoints::kRefuse) {
      refusal = "holds " + std::to_string(found.size()) + " checkpoint(s) of an earlier run (" +
                found.front().path.filename().string() +
                (found.size() > 1 ? " to " + found.back().path.filename().string() : std::string()) +
                "); continue that run with checkpoint.resume auto, start over deleting them with "
                "checkpoint.overwrite, or choose another directory";
    }
  }
  refusal = broadcast_string(world_, refusal, 0);
  if (!refusal.empty()) throw SettingError("checkpoint.dir", options_.dir, refusal);
  // This rank's units hold one tensor-parallel rank's share; the group's ranks hold about as much each.
  const CheckpointLayout layout = CheckpointLayout::of_engine(engine_);
  const std::int64_t bytes_needed = layout.state_bytes() * layout.tp;
  run_and_agree(world_, [&] {
    if (world_.rank() != 0) return;
    if (options_.resume.empty() && options_.existing == ExistingCheckpoints::kOverwrite) {
      std::error_code ec;
      fs::remove(dir / kLatestName, ec);
      for (const CommittedCheckpoint& c : list_checkpoints(dir)) discard_checkpoint(dir, c.path);
    }
    remove_stale_temporaries(dir);
    check_checkpoint_space(dir, bytes_needed);
  });
}

TrainingProgress TrainingCheckpointer::resume() {
  TrainingProgress progress;
  if (!options_.dir.empty() && world_.rank() == 0) remove_stale_temporaries(options_.dir);
  if (!options_.resume.empty()) {
    if (auto target = find_resume_target(options_, world_)) {
      check_same_tokenizer(*target);
      LoadResult loaded = load_checkpoint(engine_, world_, *target, config_);
      resumed_from_ = *target;
      resumed_config_ = loaded.meta.config;
      last_saved_step_ = loaded.progress.step;
      return loaded.progress;
    }
  }
  if (!options_.init_from.empty()) load_exported_weights(engine_, world_, options_.init_from, config_);
  return progress;
}

void TrainingCheckpointer::check_same_tokenizer(const fs::path& target) {
  std::string problem;  // rank 0 looks, every rank follows
  if (world_.rank() == 0) {
    std::optional<TokenizerSpec> theirs;
    try {
      theirs = stored_tokenizer(read_meta_file((target / kMetaFileName).string()).config);
    } catch (const std::exception&) {
      // An unreadable meta.h5 is refused by the load, naming what is wrong with it.
    }
    const std::optional<TokenizerSpec> ours = stored_tokenizer(config_);
    if (theirs && ours) {
      if (const auto difference = tokenizer_difference(*theirs, *ours)) {
        problem = target.string() + " was trained on another tokenizer's tokens than this run's data: " + *difference +
                  " (checkpoint vs data); resume with the data (or the tokenizer) it was trained "
                  "on, or start a new run";
      }
    }
  }
  problem = broadcast_string(world_, problem, 0);
  if (!problem.empty()) throw CheckpointError(CheckpointErrorKind::kConfigMismatch, problem);
}

bool TrainingCheckpointer::after_step(const TrainingProgress& progress, StateHealth health) {
  bool stop = false;
  if (signals_) {
    std::int32_t flag = signals_->received() != 0 ? 1 : 0;
    world_.all_reduce(Span(&flag, 1), DType::kI32, ReduceOp::kMax).wait();
    stop = flag != 0;
  }
  const bool due = options_.save_every > 0 && progress.step % options_.save_every == 0;
  if ((stop || due) && !options_.dir.empty() && progress.step != last_saved_step_) save(progress, health);
  if (stop) finish();
  return stop;
}

void TrainingCheckpointer::save(const TrainingProgress& progress, StateHealth health) {
  if (options_.dir.empty()) throw std::logic_error("TrainingCheckpointer::save without a checkpoint directory");
  // A device error of the work that made this state (a GPU reports a failed kernel or copy at the
  // next synchronization) is thrown here, before anything of it is saved.
  engine_.device().synchronize();
  finish();
  SaveOptions save_options;
  save_options.compression = options_.compression;
  save_options.keep_last = options_.keep_last;
  save_options.health = health;
  save_options.phase_hook = options_.phase_hook;
  const auto t0 = std::chrono::steady_clock::now();
  last_saved_step_ = progress.step;
  if (options_.mode == SaveMode::kSync) {
    SaveResult result = save_checkpoint(engine_, *save_comm_, options_.dir, progress, config_, save_options);
    last_stall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(committed_mutex_);
    committed_.push_back(std::move(result));
    return;
  }
  SaveRequest request = prepare_save(engine_, options_.dir, progress, config_, ShardSnapshot::copy(engine_, *staging_));
  writer_ = std::thread([this, request = std::move(request), save_options]() {
    try {
      SaveResult result = write_checkpoint(*save_comm_, request, save_options);
      std::lock_guard lock(committed_mutex_);
      committed_.push_back(std::move(result));
    } catch (...) {
      writer_error_ = std::current_exception();
    }
  });
  last_stall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void TrainingCheckpointer::save_final(const TrainingProgress& progress, StateHealth health) {
  if (!options_.dir.empty() && progress.step != last_saved_step_) save(progress, health);
}

void TrainingCheckpointer::mark_unhealthy_if_saved(std::int64_t step, const std::string& reason) {
  if (options_.dir.empty() || step != last_saved_step_) return;
  finish();
  if (world_.rank() != 0) return;
  const fs::path checkpoint = fs::path(options_.dir) / step_dir_name(step);
  std::error_code ec;
  if (!fs::is_directory(checkpoint, ec) || unhealthy_mark(checkpoint)) return;
  try {
    mark_checkpoint_unhealthy(checkpoint, reason);
  } catch (const CheckpointError& e) {
    warn(world_.rank(), std::string(e.what()) + " (the checkpoint still counts as healthy)");
  }
}

void TrainingCheckpointer::finish() {
  if (!writer_.joinable()) return;
  writer_.join();
  if (writer_error_) std::rethrow_exception(std::exchange(writer_error_, nullptr));
}

std::vector<SaveResult> TrainingCheckpointer::take_committed_saves() {
  std::lock_guard lock(committed_mutex_);
  return std::exchange(committed_, {});
}

std::optional<TrainingProgress> TrainingCheckpointer::reload_last_healthy() {
  finish();
  if (options_.dir.empty()) return std::nullopt;
  std::string resolved;  // rank 0 decides, every rank follows
  if (world_.rank() == 0) {
    if (auto target = newest_healthy_checkpoint(fs::path(options_.dir))) resolved = target->string();
  }
  resolved = broadcast_string(world_, resolved, 0);
  if (resolved.empty()) return std::nullopt;
  LoadResult loaded = load_checkpoint(engine_, world_, fs::path(resolved), config_);
  last_saved_step_ = loaded.progress.step;
  return loaded.progress;
}

}  // namespace tessera
