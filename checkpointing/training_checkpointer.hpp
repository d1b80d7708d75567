// TrainingCheckpointer: what a training loop calls to save, resume and stop cleanly.
//
//   TrainingCheckpointer ckpt(options, engine, world, run_config);   // collective
//   TrainingProgress p = ckpt.resume();        // collective: --resume / --init-from, or a fresh start
//   for (std::int64_t step = p.step; step < steps; ++step) {
//     ... engine.train_step(batches_for(step), lr_at(step)) ...
//     p.step = step + 1; p.samples_seen += global_batch; p.tokens_seen += global_tokens;
//     if (ckpt.after_step(p)) break;           // collective: saved on a stop signal -> stop
//   }
//   ckpt.finish();                             // waits for an async save, rethrows its error
//
// after_step saves every `save_every` steps, and when SIGTERM, SIGUSR1 or SIGINT arrived on any rank: the
// handlers only set a flag; the ranks agree on it with an all-reduce (max) at the step boundary,
// save, and after_step returns true once the checkpoint is committed.
//
// Async saves copy this rank's shard into host buffers (kept between saves and shown by the memory
// tracker as comm buffers) and return; a background thread writes and commits them over a
// communicator of its own (split from `world` at construction), so training goes on. A save waits
// for the previous one first. An error of a background save is rethrown (on every rank) by the next
// save, after_step that saves, or finish().
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/checkpointing/run_directory_lock.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/checkpointing/stop_signal.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

class ShardedEngine;

enum class SaveMode { kSync, kAsync };

// A fresh run (not resuming) pointed at a directory that already holds checkpoints: refuse to
// start (naming them), or delete them first (--overwrite).
enum class ExistingCheckpoints { kRefuse, kOverwrite };

struct CheckpointOptions {
  std::string dir;                  // --checkpoint-dir: run directory; empty: never save
  std::int64_t save_every = 0;      // --save-every N: after every N-th step; 0: on stop signals only
  int keep_last = 0;                // --keep-last K: newest K committed checkpoints kept; 0 keeps all
  SaveMode mode = SaveMode::kSync;  // --async-checkpoint: kAsync
  CheckpointCompression compression = CheckpointCompression::kNone;  // --checkpoint-compression
  // --resume: "" starts fresh; "auto" resumes from dir's latest when there is one (else fresh);
  // anything else is a run directory (its latest) or a checkpoint directory, which must exist.
  std::string resume;
  std::string init_from;  // --init-from: exported weights (tessera_ckpt export) when not resuming
  ExistingCheckpoints existing = ExistingCheckpoints::kRefuse;  // --overwrite: kOverwrite
  bool handle_signals = true;  // SIGTERM / SIGUSR1 / SIGINT: save at the next step boundary, then stop
  std::function<void(SavePhase, std::int64_t step)> phase_hook;  // for tests
};

class TrainingCheckpointer {
 public:
  // Collective over `world` (the engine's world). `config`: the run's settings; its model fields
  // are checked on resume. Throws std::invalid_argument for inconsistent options, and SettingError
  // (checkpoint.dir) for a fresh run in a directory holding checkpoints unless options.existing is
  // kOverwrite (then they are deleted here). With a directory, checks before anything trains that
  // it is writable and has room for one checkpoint (the engine's state bytes): CheckpointError(kIo)
  // naming the directory and the bytes needed and free. Before anything else it takes the
  // directory's lock (run_directory_lock.hpp) for its lifetime: CheckpointError(kIo) naming the
  // job that holds it.
  TrainingCheckpointer(CheckpointOptions options, ShardedEngine& engine, Communicator& world, RunConfig config);
  // Waits for a save still in flight (its error is dropped: call finish() to see it) and restores
  // the signal handlers. Never throws.
  ~TrainingCheckpointer();
  TrainingCheckpointer(const TrainingCheckpointer&) = delete;
  TrainingCheckpointer& operator=(const TrainingCheckpointer&) = delete;

  // Collective. Restores the engine from the checkpoint options.resume names (validated and agreed
  // before anything changes), or sets its weights from options.init_from, or does nothing. Returns
  // where to continue: the stored progress (rng_state: this rank's), or step 0 for a fresh start.
  TrainingProgress resume();
  const std::optional<std::filesystem::path>& resumed_from() const { return resumed_from_; }
  // The run settings the resumed checkpoint recorded (its batch plan among them); nullopt when the
  // run did not resume.
  const std::optional<RunConfig>& resumed_config() const { return resumed_config_; }

  // Collective; call after every optimizer step with progress.step = steps completed and whether
  // that step was taken (kHealthy) or skipped as non-finite (kNonFinite: recorded in the checkpoint,
  // and retention keeps the newest healthy checkpoint). Returns true when the loop should stop (a
  // stop signal arrived; the checkpoint is committed).
  bool after_step(const TrainingProgress& progress, StateHealth health = StateHealth::kHealthy);
  // Collective: saves now (async mode: returns once the shard is copied to host buffers). Synchronizes
  // the engine's device first: a device error of the work so far is thrown before anything is saved.
  void save(const TrainingProgress& progress, StateHealth health = StateHealth::kHealthy);
  // Collective, after the last step: saves it unless it is saved already (with a checkpoint
  // directory; a run never ends with its last steps unsaved).
  void save_final(const TrainingProgress& progress, StateHealth health);
  // Collective: the step after `step` showed the weights after `step` were not healthy (`reason`).
  // When this run saved them (or resumed or reloaded from them), their checkpoint gets the unhealthy
  // mark (health_mark.hpp; after waiting for the save in flight), so retention and reloads no longer
  // count it as healthy. A mark that cannot be written is a warning, not an error.
  void mark_unhealthy_if_saved(std::int64_t step, const std::string& reason);
  // Waits for the save in flight (each rank its own writer); rethrows its error.
  void finish();

  // Collective. Loads the newest committed checkpoint of the run directory saved from a healthy
  // step into the engine (after finishing a save in flight) and returns its progress; nullopt, with
  // nothing changed, when there is no run directory or no healthy checkpoint in it yet (a run that
  // diverged goes back to it).
  std::optional<TrainingProgress> reload_last_healthy();

  // The saves committed since the last call, oldest first — a sync save as it returns, an async
  // one once its writer committed it (its seconds: the background write) — for the program's log.
  // Not collective; any thread.
  std::vector<SaveResult> take_committed_saves();
  // Seconds the last save() blocked the caller (async: the copy to host buffers).
  double last_stall_seconds() const { return last_stall_seconds_; }

 private:
  // Collective: refuses (CheckpointError kConfigMismatch) a checkpoint whose recorded tokenizer is
  // not the one this run's config records (the data's): its ids would mean other tokens.
  void check_same_tokenizer(const std::filesystem::path& target);
  void lock_directory();
  void prepare_directory();

  CheckpointOptions options_;
  ShardedEngine& engine_;
  Communicator& world_;
  RunConfig config_;
  std::unique_ptr<RunDirectoryLock> lock_;   // rank 0's, for the checkpointer's life: one job per directory
  std::unique_ptr<Communicator> save_comm_;  // used by one save at a time (this or the writer thread)
  std::unique_ptr<StopSignalHandler> signals_;
  std::unique_ptr<HostStagingBuffer> staging_;
  std::thread writer_;
  std::exception_ptr writer_error_;
  std::optional<std::filesystem::path> resumed_from_;
  std::optional<RunConfig> resumed_config_;
  std::mutex committed_mutex_;  // the writer thread adds, the caller takes
  std::vector<SaveResult> committed_;
  std::int64_t last_saved_step_ = -1;
  double last_stall_seconds_ = 0.0;
};

}  // namespace tessera
