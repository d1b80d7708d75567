// TrainingRun: the training loop every program shares — train_gpt and any program that embeds
// Tessera get the same resume, data position, checkpoints, stop-and-save on a signal, spike guard,
// validation, progress and metrics by filling in TrainingRunOptions:
//
//   ShardedEngine engine(model, *device, world, sharding, seed);
//   TrainingRunOptions options;
//   options.steps = 1000;
//   options.batch = plan_batch(request);           // global = micro x ranks x accumulation
//   options.schedule = {3e-4f, 100, 1000, 0.1f};
//   options.checkpoint.dir = "run";                // saves, and resumes with options.checkpoint.resume
//   options.checkpoint.save_every = 100;
//   options.checkpoint.resume = "auto";
//   TrainingRun run(engine, world, options, [&](std::int64_t first, std::int64_t count) {
//     return batch_of_samples(first, count);      // MicroBatch of global samples [first, first + count)
//   });
//   RunEnd end = run.run();                        // collective
//
// What the loop does, step by step:
//  * Data position. Rank r at step s, micro-step a reads the samples from
//    resumed.samples_seen + first_sample_index(s - resumed.step, a, r, micro, ranks, accumulation)
//    (text/data/sample_loader.hpp), so a resumed run, or one on another rank count with the same global
//    batch, reads the samples an uninterrupted run would have read.
//  * Checkpoints (checkpointing/training_checkpointer.hpp): resumed at construction; saved every
//    checkpoint.save_every steps, after the last step, and at the next step boundary after
//    SIGTERM/SIGUSR1/SIGINT (Ctrl-C) on any rank, after which the run stops (RunEnd::kStopped). A state is saved as
//    healthy when its step was taken with a finite loss inside the spike guard's band
//    (training/step_health.hpp; the guard's defaults when it is off); a save whose next step shows a
//    loss that is not finite or out of band gets the unhealthy mark. Retention keeps the newest
//    healthy checkpoint.
//  * Divergence. run.max_skipped_steps skipped steps in a row stop the run (RunEnd::kDiverged) with
//    a message saying what to change — unless the spike guard is on and the run directory holds a
//    healthy checkpoint: then the run goes back to it (at most max_reloads times) and moves the data
//    past the skipped batches, so they are not seen again.
//  * Dropout masks (model/modules/dropout.hpp): every Dropout of the model is seeded with run.seed
//    and the micro-batches trained before the run's first step, so a resumed run draws the masks of
//    the run that never stopped (a reload keeps the counters running: the batches are new ones).
//  * Reporting (StepReporter): progress lines, validation losses, saves, the metrics file and its
//    plots, the memory profile.
//
// Messages name settings through options.names (a program passes its flags: "--checkpoint-dir").
// Collective: every rank constructs the run and calls run() with the same options.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/model/optim/lr_schedule.hpp"
#include "tessera/run/step_reporter.hpp"
#include "tessera/runtime/memory_profiler.hpp"
#include "tessera/training/batch_plan.hpp"
#include "tessera/training/loss.hpp"
#include "tessera/training/resumed_batch_plan.hpp"
#include "tessera/training/micro_batch.hpp"
#include "tessera/training/progress_display.hpp"
#include "tessera/training/skipped_steps.hpp"
#include "tessera/training/spike_detector.hpp"
#include "tessera/training/step_health.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {

// The micro-batch of global samples [first, first + count) on the run's device (training/
// micro_batch.hpp): for the GPT path inputs and targets (count, seq_len) i32; for a model and loss of
// your own, what they take. Called on every rank with that rank's samples.
using BatchSource = std::function<MicroBatch(std::int64_t first, std::int64_t count)>;

struct TrainingRunOptions {
  std::int64_t steps = 0;        // run.steps: train until this many optimizer steps are complete
  BatchPlan batch;               // the global batch plan (plan_batch); batch.ranks must be the world size
  // batch.change: kKeep refuses a resume from a checkpoint trained with another global batch
  // (plan_run_batch, run/run_batch_plan.hpp, keeps it); kAllow lets the global batch change.
  BatchChange batch_change = BatchChange::kKeep;
  LrSchedule schedule;           // learning rate per step
  // What the steps minimise (training/loss.hpp: MeanSquaredError, MaskedCrossEntropy or your own) and
  // the validation measures through the run's Trainer; null: TokenCrossEntropy, the GPT path's.
  std::shared_ptr<Loss> loss;
  std::uint64_t seed = 0;        // run.seed: the data order's seed, stored with the progress
  CheckpointOptions checkpoint;  // where and when to save, what to resume from
  // The run's settings stored in every checkpoint: the model fields (a resume must match them) and
  // the program's own run fields; the run adds the batch plan and the learning-rate schedule.
  RunConfig run_config;

  std::int64_t max_skipped_steps = 20;     // run.max_skipped_steps: skipped in a row that stop the run (0: never)
  std::optional<SpikeConfig> spike_guard;  // run.spike_guard: skip outlier steps, go back to a checkpoint
  int max_reloads = 3;                     // checkpoint reloads before a run that keeps diverging stops
  // run.check_replicas: every this many steps (0: off), compare every rank's replicated parameters by
  // checksum and stop the run (ReplicaDivergence) naming the first that differs; ZeRO stages 0-2
  // (sharding/replica_check.hpp)
  std::int64_t check_replicas = 0;

  // The validation loss (collective, on the run's Trainer), measured at the start, every eval_every
  // steps and after the last step; empty: none.
  std::function<float(Trainer&)> validation;
  std::int64_t eval_every = 0;

  std::int64_t log_every = 20;                     // progress lines (and metrics records) every this many steps
  ProgressStyle progress = ProgressStyle::kPlain;  // rank 0's display
  std::string metrics_path;                        // JSON-lines metrics (training/metrics_log.hpp) and plots; "": none
  std::string tensorboard_dir;                     // run.tensorboard_dir: TensorBoard event files; "": none
  double flops_per_token = 0.0;                    // training FLOPs per token, for MFU
  double ceiling_gflops = 0.0;                     // one rank's measured GEMM ceiling, for MFU
  // The ranks on a node times their threads are more than its cores: each rank has less than the
  // ceiling measured alone, and the progress shows "MFU n/a" (the metrics file keeps the figure).
  bool shared_cores = false;
  std::string memory_profile;                      // directory for the per-rank memory timeline; "": off
  // Called on every rank after every step that counts (not one undone by a reload), with the steps
  // completed and the step's result: a program's own logging.
  std::function<void(std::int64_t step, const StepResult& result)> on_step;

  std::string program = "training";  // prefix of the run's messages
  SettingNames names;                // the program's spelling of the settings messages name
};

enum class RunEnd {
  kCompleted,  // every step ran
  kStopped,    // a stop signal: the last step was saved (with a checkpoint directory) and the run stopped
  kDiverged,   // too many skipped steps in a row, nothing left to go back to
};

class TrainingRun {
 public:
  // Collective over `world` (the host world: the engine's own communicator may be NCCL). Validates
  // the options (SettingError naming the setting), builds the checkpointer and resumes: from here on
  // resumed_from() and progress() tell where the run starts. `engine` and `world` must outlive it.
  TrainingRun(ShardedEngine& engine, Communicator& world, TrainingRunOptions options, BatchSource batches);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // The checkpoint the run resumed from, if any.
  const std::optional<std::filesystem::path>& resumed_from() const { return checkpointer_.resumed_from(); }
  // Where the run stands (after construction: where it starts).
  const TrainingProgress& progress() const { return progress_; }

  // Collective: trains from progress().step to options.steps, then finishes the checkpointer and the
  // reporting (rank 0 prints the memory summary and the metrics and profile files). Throws what the
  // steps, saves or batches throw; every rank throws alike for collective failures. A DeviceError
  // gets the step it happened in added ("...; in step 4"). Each step begins with
  // Device::begin_step; a save synchronizes the device first, so a failure of the step's device work
  // surfaces before anything of it is saved.
  RunEnd run();

  // Collective, after run() returned kCompleted and the program did work of its own (a sample): a stop
  // signal that arrived since saves the last step again; rank 0 prints the stop line. True when one did.
  bool stop_signal_since_run();

 private:
  RunEnd loop();
  // Refuses (SettingError) a resume whose global batch is not the checkpoint's unless batch_change allows.
  void check_resumed_global_batch() const;
  // Seeds every Dropout of the model with run.seed and the micro-batches trained so far.
  void seed_masks();
  std::vector<MicroBatch> batches_of_step(std::int64_t step);
  void report_skip(std::int64_t step, const StepResult& result);
  // Goes back to the latest healthy checkpoint after a streak of skipped steps; false when it cannot.
  bool reload(std::int64_t& step);
  void finish_reporting(RunEnd end);

  ShardedEngine& engine_;
  Communicator& world_;
  // The ranks that split each step's batch: the engine's data-parallel group when the model is split
  // over a tensor-parallel group (whose ranks read the same samples), else the world.
  Communicator& data_parallel_;
  TrainingRunOptions options_;
  BatchSource batches_;
  Trainer trainer_;
  std::optional<SpikeDetector> spike_detector_;
  StepHealth health_;  // the checkpoints' health marks, by the spike guard's statistics
  SkippedSteps skipped_;
  int reloads_ = 0;
  std::optional<MemoryProfiler> profiler_;
  TrainingCheckpointer checkpointer_;
  TrainingProgress progress_;
  TrainingProgress resumed_;  // where the data position counts from (the resume, or the last reload)
  std::int64_t step_begun_ = 0;  // the step the loop began last (1-based); 0 before the first
  StateHealth last_health_ = StateHealth::kHealthy;  // of the last step taken, for a save after the loop
  std::optional<StepReporter> reporter_;             // while run() runs
};

}  // namespace tessera
