// TrainingRun: the loop — data position, steps, checkpoints, skipped steps and reloads, reporting.
#include "tessera/run/training_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tessera/core/warning.hpp"
#include "tessera/core/wrapped_line.hpp"
#include "tessera/model/modules/dropout.hpp"
#include "tessera/run/run_batch_plan.hpp"
#include "tessera/run/run_messages.hpp"
#include "tessera/run/settings_agreement.hpp"
#include "tessera/runtime/device_error.hpp"
#include "tessera/sharding/replica_check.hpp"
#include "tessera/text/data/sample_loader.hpp"

namespace tessera {
namespace {

// The program's run settings plus the batch plan and the learning-rate schedule, as every checkpoint
// records them (shown by `tessera_ckpt info`).
RunConfig recorded_config(const TrainingRunOptions& o) {
  RunConfig config = o.run_config;
  config.set_run("global_batch", o.batch.global);
  config.set_run("micro_batch", o.batch.micro);
  config.set_run("grad_accum", o.batch.accumulation);
  config.set_run("data_parallel_ranks", o.batch.ranks);
  config.set_run("seq_len", o.batch.seq_len);
  config.set_run("lr", o.schedule.base_lr);
  config.set_run("warmup_steps", o.schedule.warmup_steps);
  config.set_run("total_steps", o.schedule.total_steps);
  config.set_run("min_lr_ratio", o.schedule.min_lr_ratio);
  return config;
}

// Refuses options the loop cannot run with, naming the setting (a program checks its flags first).
const TrainingRunOptions& validated(const TrainingRunOptions& o, const Communicator& world) {
  const auto refuse = [](const std::string& setting, std::int64_t value, const std::string& problem) {
    throw SettingError(setting, std::to_string(value), problem);
  };
  if (o.steps < 0) refuse("run.steps", o.steps, "must be >= 0");
  if (o.batch.micro < 1 || o.batch.accumulation < 1 ||
      o.batch.global != o.batch.micro * o.batch.ranks * o.batch.accumulation) {
    throw SettingError("batch.global", std::to_string(o.batch.global),
                       "must be micro x ranks x accumulation, each >= 1 (make the plan with plan_batch)");
  }
  if (o.batch.ranks != world.size()) {
    refuse("batch.ranks", o.batch.ranks,
           "the plan is for another rank count: this job has " + std::to_string(world.size()) + " data-parallel ranks");
  }
  if (o.log_every < 1) refuse("run.log_every", o.log_every, "must be >= 1");
  if (o.eval_every < 0) refuse("run.eval_every", o.eval_every, "must be >= 0 (0: off)");
  if (o.max_skipped_steps < 0) refuse("run.max_skipped_steps", o.max_skipped_steps, "must be >= 0 (0: never stop)");
  if (o.max_reloads < 0) refuse("run.max_reloads", o.max_reloads, "must be >= 0");
  if (o.spike_guard) o.spike_guard->validate();
  return o;
}

// Everything a rank runs with, for check_settings_agree: the program's effective configuration
// (each option's value, not where it came from), the recorded model and run fields, the engine's
// settings and the loop's own.
SettingList settings_of(const TrainingRunOptions& o, const ShardedEngine& engine) {
  SettingList settings;
  const std::string& effective = o.run_config.effective_config();
  for (std::size_t at = 0; at < effective.size();) {
    std::size_t end = effective.find('\n', at);
    if (end == std::string::npos) end = effective.size();
    const std::string line = effective.substr(at, end - at);
    at = end + 1;
    const std::size_t equals = line.find(" = ");
    if (line.empty() || line[0] == '#' || equals == std::string::npos) continue;
    std::string value = line.substr(equals + 3);
    value = value.substr(0, value.find("  # "));  // the origin may differ; the value may not
    value.erase(value.find_last_not_of(' ') + 1);
    settings.emplace_back("--" + line.substr(0, equals), value);
  }
  const RunConfig recorded = recorded_config(o);
  for (const auto& [key, value] : recorded.model()) settings.emplace_back("model." + key, value);
  for (const auto& [key, value] : recorded.run()) settings.emplace_back("run." + key, value);
  const ShardingConfig& engine_config = engine.config();
  const AdamWConfig& adamw = engine_config.optimizer.adamw;
  settings.emplace_back("sharding", engine_config.to_string());
  settings.emplace_back("sharding.hybrid_group", std::to_string(engine_config.hybrid_group));
  settings.emplace_back("sharding.grad_clip", RunConfig::format_value(engine_config.grad_clip));
  settings.emplace_back("optimizer.kind", optimizer_kind_name(engine_config.optimizer.kind));
  settings.emplace_back("optimizer.adamw", RunConfig::format_value(adamw.beta1) + " " +
                                               RunConfig::format_value(adamw.beta2) + " " +
                                               RunConfig::format_value(adamw.eps));
  settings.emplace_back("optimizer.weight_decay", RunConfig::format_value(adamw.weight_decay));
  settings.emplace_back("run.loss", o.loss ? o.loss->name() : "cross-entropy");
  settings.emplace_back("run.seed", std::to_string(o.seed));
  settings.emplace_back("run.steps", std::to_string(o.steps));
  settings.emplace_back("run.max_skipped_steps", std::to_string(o.max_skipped_steps));
  settings.emplace_back("run.spike_guard", o.spike_guard ? std::to_string(o.spike_guard->window) + " " +
                                                               std::to_string(o.spike_guard->warmup) + " " +
                                                               RunConfig::format_value(o.spike_guard->z)
                                                         : "off");
  settings.emplace_back("checkpoint.dir", o.checkpoint.dir);
  settings.emplace_back("checkpoint.save_every", std::to_string(o.checkpoint.save_every));
  settings.emplace_back("checkpoint.keep_last", std::to_string(o.checkpoint.keep_last));
  settings.emplace_back("checkpoint.resume", o.checkpoint.resume);
  settings.emplace_back("checkpoint.init_from", o.checkpoint.init_from);
  return settings;
}

// Refuses options the loop cannot run with (validated), after the ranks agreed they all run with
// the same settings.
const TrainingRunOptions& agreed(const TrainingRunOptions& o, const ShardedEngine& engine, Communicator& world,
                                 const Communicator& data_parallel) {
  check_settings_agree(world, settings_of(o, engine), o.names);
  return validated(o, data_parallel);
}

Communicator& data_parallel_of(ShardedEngine& engine, Communicator& world) {
  const Communicator* tensor = engine.tensor_parallel_group();
  return tensor != nullptr && tensor->size() > 1 ? engine.world() : world;
}

}  // namespace

TrainingRun::TrainingRun(ShardedEngine& engine, Communicator& world, TrainingRunOptions options, BatchSource batches)
    : engine_(engine),
      world_(world),
      data_parallel_(data_parallel_of(engine, world)),
      options_(agreed(options, engine, world, data_parallel_)),
      batches_(std::move(batches)),
      trainer_(engine, options_.loss),
      health_(options_.spike_guard.value_or(SpikeConfig{})),
      skipped_(options_.max_skipped_steps),
      checkpointer_(options_.checkpoint, engine, world, recorded_config(options_)) {
  if (options_.spike_guard) {
    spike_detector_.emplace(*options_.spike_guard);
    trainer_.set_spike_detector(&*spike_detector_);
  }
  if (!options_.memory_profile.empty()) profiler_.emplace(engine.device().memory());
  progress_ = checkpointer_.resume();  // step 0 unless checkpoint.resume found a checkpoint
  check_resumed_global_batch();
  if (checkpointer_.resumed_from() && progress_.data_seed != options_.seed && world_.rank() == 0) {
    warn(world_.rank(), seed_change_warning(options_.seed, progress_.data_seed, options_.names));
  }
  progress_.data_seed = options_.seed;
  resumed_ = progress_;  // the loader continues at resumed_.samples_seen
  seed_masks();
}

void TrainingRun::seed_masks() {
  // One backward per micro-batch: the masks an uninterrupted run draws from here on.
  seed_dropout(engine_.model(), options_.seed,
               static_cast<std::uint64_t>(progress_.step) * static_cast<std::uint64_t>(options_.batch.accumulation));
}

void TrainingRun::check_resumed_global_batch() const {
  const std::optional<RunConfig>& saved_config = checkpointer_.resumed_config();
  if (!saved_config || options_.batch_change == BatchChange::kAllow) return;
  const std::optional<SavedBatch> saved = saved_batch_of(saved_config->run());
  if (!saved || saved->global == options_.batch.global) return;
  throw SettingError("batch.global", std::to_string(options_.batch.global),
                     "the checkpoint " + checkpointer_.resumed_from()->string() + " was trained with global batch " +
                         std::to_string(saved->global) +
                         " and a resume keeps it (plan the batch with plan_run_batch); set batch.change allow to "
                         "change it");
}

std::vector<MicroBatch> TrainingRun::batches_of_step(std::int64_t step) {
  const BatchPlan& plan = options_.batch;
  std::vector<MicroBatch> batches;
  for (std::int64_t a = 0; a < plan.accumulation; ++a) {
    const std::int64_t first =
        resumed_.samples_seen + first_sample_index(step - resumed_.step, a, data_parallel_.rank(), plan.micro,
                                                   data_parallel_.size(), plan.accumulation);
    batches.push_back(batches_(first, plan.micro));
  }
  return batches;
}

void TrainingRun::report_skip(std::int64_t step, const StepResult& result) {
  skipped_.record(result);
  if (!skipped_.report_now()) return;
  char text[64];
  std::snprintf(text, sizeof text, "step %5lld skipped: ", static_cast<long long>(step + 1));
  reporter_->line(text + skip_reason(result, spike_detector_ ? spike_detector_->last_reason() : "") + " (" +
                  std::to_string(skipped_.consecutive()) + " in a row, " + std::to_string(skipped_.total()) +
                  " in this run)");
}

bool TrainingRun::reload(std::int64_t& step) {
  const std::optional<TrainingProgress> back =
      options_.spike_guard && reloads_ < options_.max_reloads ? checkpointer_.reload_last_healthy() : std::nullopt;
  if (!back) return false;
  ++reloads_;
  // Back to the checkpoint's weights, but the data goes on where this step stopped: the batches of
  // the skipped steps are not seen again.
  const std::int64_t samples_now = progress_.samples_seen, tokens_now = progress_.tokens_seen;
  progress_ = *back;
  progress_.samples_seen = samples_now;
  progress_.tokens_seen = tokens_now;
  progress_.data_seed = options_.seed;
  resumed_ = progress_;
  char text[192];
  std::snprintf(text, sizeof text,
                "step %5lld: %lld steps in a row skipped; reloaded the checkpoint of step %lld and moved the data "
                "past the skipped batches (to sample %lld)",
                static_cast<long long>(step + 1), static_cast<long long>(skipped_.consecutive()),
                static_cast<long long>(back->step), static_cast<long long>(samples_now));
  reporter_->line(text);
  reporter_->went_back(back->step);
  skipped_.reset_streak();
  step = back->step - 1;  // the loop's ++step runs the checkpoint's next step
  return true;
}

RunEnd TrainingRun::loop() {
  const BatchPlan& plan = options_.batch;
  for (std::int64_t step = progress_.step; step < options_.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    step_begun_ = step + 1;
    engine_.device().begin_step(step_begun_);
    const std::vector<MicroBatch> batches = batches_of_step(step);
    const float lr = options_.schedule.lr_at(step);
    if (profiler_) {
      profiler_->begin_step(step);
      engine_.set_phase_observer([this](const std::string& phase) { profiler_->on_phase(phase); });
    }
    const StepResult r = trainer_.train_step(batches, lr);
    // The step's work done on the device before anything reports or saves it: an error a GPU reports
    // only at a later synchronization (a failed kernel or copy) is thrown here, in its step.
    engine_.device().synchronize();
    engine_.set_phase_observer({});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_replicas_every(engine_, data_parallel_, options_.check_replicas, step + 1);  // before anything is saved
    progress_.step = step + 1;
    progress_.samples_seen += plan.global;
    progress_.tokens_seen += plan.global_tokens();
    // The step's loss judges the weights going into it (a save made right before gets the unhealthy
    // mark when they were not); the weights after it are saved as healthy only when the step was
    // taken with a finite loss inside the band.
    const StepHealthVerdict verdict = health_.judge(r);
    if (!verdict.state_before_healthy) {
      checkpointer_.mark_unhealthy_if_saved(
          step, "the loss of step " + std::to_string(step + 1) + ", right after it: " + verdict.reason);
    }
    const StateHealth health = verdict.state_after_healthy ? StateHealth::kHealthy : StateHealth::kNonFinite;
    report_skip(step, r);
    const bool diverging = skipped_.exhausted();
    // The step's record (the log line, the metrics file) is written before its state is saved: a
    // run killed between the two has logged a step it will train again, never saved a step whose
    // record a resume would not write again (a gap in the loss curve).
    if (!diverging) reporter_->step_done(step + 1, r, lr, seconds, skipped_.total());
    const bool stopped = checkpointer_.after_step(progress_, health);
    reporter_->saves(checkpointer_.take_committed_saves(), options_.checkpoint.mode == SaveMode::kAsync);
    last_health_ = health;
    if (stopped) {
      reporter_->line(stop_signal_line(options_.checkpoint.dir, progress_.step, options_.steps, options_.names));
    }
    if (!stopped && diverging) {
      if (reload(step)) continue;
      reporter_->finish();
      if (world_.rank() == 0) {
        Divergence d;
        d.program = options_.program;
        d.step = step + 1;
        d.consecutive = skipped_.consecutive();
        d.total = skipped_.total();
        d.limit = skipped_.limit();
        d.reloads = reloads_;
        d.spike_guard = options_.spike_guard.has_value();
        d.checkpoint_dir = options_.checkpoint.dir;
        d.lr = options_.schedule.base_lr;
        d.grad_clip = engine_.config().grad_clip;
        std::fprintf(stderr, "%s", diverged_message(d, options_.names).c_str());
        std::fflush(stderr);
      }
      checkpointer_.finish();
      return RunEnd::kDiverged;
    }
    if (diverging) reporter_->step_done(step + 1, r, lr, seconds, skipped_.total());  // and stopped
    if (options_.on_step) options_.on_step(step + 1, r);
    if (stopped) return RunEnd::kStopped;
    if (options_.validation && options_.eval_every > 0 &&
        ((step + 1) % options_.eval_every == 0 || step + 1 == options_.steps)) {
      reporter_->validation(step + 1, options_.validation(trainer_));
    }
  }
  // A stop signal that arrived after the last step's check (during the last validation) saves the
  // last step and stops, so a requeued job resumes at the end.
  if (checkpointer_.after_step(progress_, last_health_)) {
    reporter_->line(stop_signal_line(options_.checkpoint.dir, progress_.step, options_.steps, options_.names));
    return RunEnd::kStopped;
  }
  checkpointer_.save_final(progress_, last_health_);
  return RunEnd::kCompleted;
}

RunEnd TrainingRun::run() {
  StepReporterConfig report;
  report.total_steps = options_.steps;
  report.log_every = options_.log_every;
  report.tokens_per_step = options_.batch.global_tokens();
  report.flops_per_token = options_.flops_per_token;
  report.ceiling_gflops = options_.ceiling_gflops;
  report.mfu_shared_cores = options_.shared_cores;
  report.metrics_path = options_.metrics_path;
  report.tensorboard_dir = options_.tensorboard_dir;
  report.effective_config = options_.run_config.effective_config();
  report.environment_json = options_.run_config.environment_report();
  if (checkpointer_.resumed_from()) report.resumed_at = progress_.step;
  report.ranks = world_.size();
  report.zero_stage = zero_stage_number(engine_.config().stage);
  report.global_batch = options_.batch.global;
  report.style = options_.progress;
  reporter_.emplace(report, world_, engine_.device(), profiler_ ? &*profiler_ : nullptr);
  if (options_.validation) reporter_->validation(progress_.step, options_.validation(trainer_));

  RunEnd end = RunEnd::kCompleted;
  try {
    end = loop();
  } catch (const DeviceError& e) {  // which step the device failed in
    throw e.with_context(step_begun_ > 0 ? "in step " + std::to_string(step_begun_) : "before the first step");
  }
  if (end != RunEnd::kDiverged) finish_reporting(end);
  reporter_.reset();
  return end;
}

void TrainingRun::finish_reporting(RunEnd end) {
  // Rank 0 prints the files it wrote and the memory summary unless the run is quiet.
  const bool root = world_.rank() == 0 && options_.progress != ProgressStyle::kQuiet;
  checkpointer_.finish();
  reporter_->saves(checkpointer_.take_committed_saves(), options_.checkpoint.mode == SaveMode::kAsync);
  const std::vector<std::string> plots = reporter_->finish();
  if (root && !plots.empty()) {
    std::printf("%s", wrapped_line("metrics:", {options_.metrics_path, "plots: " + plots[0], plots[1]}).c_str());
  }
  if (end == RunEnd::kStopped) return;
  Device& device = engine_.device();
  if (root) {
    std::printf("\nmemory of rank 0:\n%s",
                (profiler_ ? profiler_->summary() : memory_summary(device.memory())).c_str());
  }
  if (profiler_) {
    // Step 1 (the second) is the first steady-state step: compare the last one with it.
    const std::int64_t first = std::min<std::int64_t>(1, options_.steps - 1), last = options_.steps - 1;
    for (const MemoryLeak& leak : profiler_->check_leaks(first, last)) {
      warn(world_.rank(), "memory leak? " + leak.message());
    }
    const auto files = write_memory_profile(*profiler_, options_.memory_profile, world_.rank(), first);
    if (root) std::printf("memory profile: %s (and the other ranks' files beside it)\n", files.front().c_str());
  }
}

bool TrainingRun::stop_signal_since_run() {
  if (!checkpointer_.after_step(progress_, last_health_)) return false;
  if (world_.rank() == 0) {
    std::printf("%s\n",
                stop_signal_line(options_.checkpoint.dir, progress_.step, options_.steps, options_.names).c_str());
    std::fflush(stdout);
  }
  return true;
}

}  // namespace tessera
