// StepReporter: progress, logged steps, validation, saves and the metrics file of a training run.
#include "tessera/run/step_reporter.hpp"

#include <cstdio>

#include "tessera/core/setting_error.hpp"
#include "tessera/training/metrics_plots.hpp"

namespace tessera {
namespace {

// Largest value of `x` over all ranks (for per-rank memory and step times).
float max_over_ranks(Communicator& world, float x) {
  world.all_reduce(Span(&x, 1), DType::kF32, ReduceOp::kMax).wait();
  return x;
}

}  // namespace

StepReporter::StepReporter(const StepReporterConfig& config, Communicator& world, Device& device,
                           const MemoryProfiler* profiler)
    : config_(config),
      world_(world),
      device_(device),
      profiler_(profiler),
      root_(world.rank() == 0),
      display_(root_ ? config.style : ProgressStyle::kQuiet),
      eta_(config.total_steps),
      start_(std::chrono::steady_clock::now()) {
  if (!root_) return;
  if (!config_.metrics_path.empty()) {
    metrics_.emplace(config_.metrics_path, config_.resumed_at);
    metrics_->append_config(config_.resumed_at.value_or(0), config_.effective_config, config_.environment_json);
  }
  if (!config_.tensorboard_dir.empty()) {
    try {
      tensorboard_.emplace(config_.tensorboard_dir);
    } catch (const std::runtime_error& e) {
      throw SettingError("run.tensorboard_dir", config_.tensorboard_dir,
                         std::string(e.what()) + ": give a directory that can be created and written");
    }
  }
  if (config_.resumed_at) {
    const ResumeRecord resume{
        *config_.resumed_at,
        config_.ranks,
        config_.zero_stage,
        config_.global_batch,
        metrics_ ? metrics_->elapsed_before() : 0.0,
        metrics_ ? std::max<std::int64_t>(0, metrics_->last_step_dropped() - *config_.resumed_at) : 0};
    if (metrics_) metrics_->append(resume);
    if (tensorboard_) {
      tensorboard_->write_start(resume.step + 1,
                                "resumed after step " + std::to_string(resume.step) + ": " + resume_label(resume));
    }
  }
}

double StepReporter::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StepReporter::step_done(std::int64_t step, const StepResult& r, float lr, double seconds,
                             std::int64_t skipped_total) {
  window_seconds_ += seconds;
  ++window_steps_;
  eta_.record(step, seconds);
  ProgressFigures f;
  f.step = step;
  f.total_steps = config_.total_steps;
  f.loss = r.loss;
  f.lr = lr;
  f.grad_norm = r.grad_norm;
  f.skipped = r.skipped;
  f.elapsed_s = elapsed();
  f.eta_s = eta_.seconds_left();
  const bool logged = step % config_.log_every == 0 || step == 1 || step == config_.total_steps;
  if (!logged) {
    if (root_) {
      f.tokens_per_s = static_cast<double>(config_.tokens_per_step) / eta_.seconds_per_step().value_or(seconds);
      display_.update(f);
    }
    return;
  }
  const float window = max_over_ranks(world_, static_cast<float>(window_seconds_));
  const MemorySnapshot memory = profiler_ ? profiler_->overall_peaks() : device_.memory().snapshot();
  f.peak_mib = max_over_ranks(world_, static_cast<float>(memory.peak_total) / 1048576.0f);
  f.tokens_per_s = static_cast<double>(config_.tokens_per_step * window_steps_) / window;
  f.mfu_shared_cores = config_.mfu_shared_cores;
  f.mfu = f.tokens_per_s * config_.flops_per_token / (world_.size() * config_.ceiling_gflops * 1e9);
  window_seconds_ = 0.0;
  window_steps_ = 0;
  if (!root_) return;
  display_.log_step(f);
  if (metrics_ || tensorboard_) {
    TrainRecord record;
    record.step = step;
    record.loss = r.loss;
    record.lr = lr;
    record.grad_norm = r.grad_norm;
    record.skipped = r.skipped;
    record.tokens_per_s = f.tokens_per_s;
    record.mfu = f.mfu;
    record.memory_current = memory.current;
    record.memory_peak = memory.peak;
    record.memory_current_total = memory.current_total;
    record.memory_peak_total = memory.peak_total;
    record.skipped_steps = skipped_total;
    record.elapsed_s = (metrics_ ? metrics_->elapsed_before() : 0.0) + f.elapsed_s;
    if (metrics_) metrics_->append(record);
    if (tensorboard_) tensorboard_->write_scalars(step, tensorboard_scalars(record));
  }
}

void StepReporter::validation(std::int64_t step, float loss) {
  if (!root_) return;
  char text[64];
  std::snprintf(text, sizeof text, "step %5lld | val loss %.4f", static_cast<long long>(step), loss);
  display_.line(text);
  const ValidationRecord record{step, loss, (metrics_ ? metrics_->elapsed_before() : 0.0) + elapsed()};
  if (metrics_) metrics_->append(record);
  if (tensorboard_) tensorboard_->write_scalars(step, tensorboard_scalars(record));
}

void StepReporter::line(const std::string& text) {
  if (root_) display_.line(text);
}

void StepReporter::saves(const std::vector<SaveResult>& committed, bool async) {
  if (!root_) return;
  for (const SaveResult& s : committed) {
    char text[96];
    std::snprintf(text, sizeof text, " (%s in %.2f s%s)", format_bytes(s.checkpoint_bytes).c_str(), s.seconds,
                  async ? ", written in the background" : "");
    display_.line("checkpoint: saved step " + std::to_string(s.step) + " to " + s.path.string() + text);
  }
}

void StepReporter::went_back(std::int64_t step) {
  window_seconds_ = 0.0;
  window_steps_ = 0;
  if (metrics_) metrics_->rewind(step);
  if (tensorboard_) tensorboard_->write_start(step + 1, "went back to the checkpoint of step " + std::to_string(step));
}

std::vector<std::string> StepReporter::finish() {
  display_.finish();
  if (!metrics_) return {};
  const MetricsPlotFiles files = write_metrics_plots(metrics_->path());
  return {files.loss, files.throughput};
}

}  // namespace tessera
