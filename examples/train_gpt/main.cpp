// train_gpt: trains a GPT-2-style model on a token file, on one process or data-parallel across
// the ranks of an mpirun/srun job with ZeRO stages 0-3. Rank 0 prints the effective configuration,
// shows the progress (a live line on a terminal; loss, learning rate, gradient norm, tokens/s, MFU
// against the GEMM ceiling measured at start and peak memory per rank every --log-every steps:
// step_reporter.hpp), writes --metrics, and prints a text sample at the end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpointing/training_checkpointer.hpp"
#include "training/batch_plan.hpp"
#include "launch/run_distributed.hpp"
#include "runtime/recompute/activation_checkpointing.hpp"
#include "runtime/cpu/blas_core.hpp"
#include "checkpointing/tokenizer_fields.hpp"
#include "runtime/data/data_format.hpp"
#include "runtime/data/sample_loader.hpp"
#include "runtime/tokenizer/printable_text.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/gemm_ceiling.hpp"
#include "runtime/memory_profiler.hpp"
#include "runtime/out_of_memory.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/modules/gpt_flops.hpp"
#include "runtime/modules/gpt_sampling.hpp"
#include "runtime/optim/lr_schedule.hpp"
#include "sharding/sharded_engine.hpp"
#include "training/trainer.hpp"
#include "training/skipped_steps.hpp"
#include "runtime/data/token_id_check.hpp"
#include "training/validation_loss.hpp"
#include "core/warning.hpp"
#include "flags/device_flag.hpp"
#include "flags/train_gpt_flags.hpp"
#include "run_settings.hpp"
#include "step_reporter.hpp"
#include "stop_report.hpp"
#include "train_options.hpp"

namespace tessera {
namespace {

std::string default_val_path(const std::string& train_path) {
  std::filesystem::path p(train_path);
  return (p.parent_path() / (p.stem().string() + "_val" + p.extension().string())).string();
}

std::int64_t padded_vocab(std::int64_t vocab) { return (vocab + 63) / 64 * 64; }

MicroBatch load_batch(Device& device, const SampleLoader& loader, std::int64_t first, std::int64_t count) {
  const std::int64_t t = loader.seq_len();
  std::vector<std::int32_t> inputs, targets;
  try {
    inputs.resize(static_cast<std::size_t>(count * t));
    targets.resize(inputs.size());
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError("train_gpt: out of host memory allocating the token batch (2 x micro-batch " +
                           std::to_string(count) + " x seq-len " + std::to_string(t) + " int32, " +
                           format_bytes(2 * count * t * 4) + "); use a smaller --micro-batch");
  }
  loader.batch(first, count, inputs.data(), targets.data());
  return {Tensor::from_host_i32(device, inputs, {count, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, targets, {count, t}, MemoryCategory::kWorkspace)};
}

constexpr int kMaxReloads = 3;  // checkpoint reloads before a run that keeps diverging stops

// Why a run stopped after --max-skipped-steps skips in a row, and what to change.
std::string diverged_message(const TrainOptions& o, std::int64_t step, const SkippedSteps& skipped, int reloads) {
  std::string text = "train_gpt: stopping at step " + std::to_string(step) + ": the last " +
                     std::to_string(skipped.consecutive()) + " steps were all skipped (--max-skipped-steps " +
                     std::to_string(o.max_skipped_steps) + "; " + std::to_string(skipped.total()) +
                     " skipped in this run); the training has diverged";
  if (reloads > 0) {
    text += " again after " + std::to_string(reloads) + " reload(s) of the latest checkpoint";
  } else if (o.spike_guard) {
    text += o.checkpoint_dir.empty() ? "; there is no --checkpoint-dir to go back to"
                                     : "; " + o.checkpoint_dir + " holds no checkpoint to go back to yet";
  }
  char now[96];
  std::snprintf(now, sizeof now, "(now %g), a gradient clip (--grad-clip, now %g)", o.lr, o.grad_clip);
  text += ".\nTry a lower --lr " + std::string(now) + ", a longer --warmup, f32 instead of bf16/f16 --param-dtype/--reduce-dtype, "
          "or --spike-guard with --save-every so the run can go back to a checkpoint.\n";
  return text;
}

int run(DistributedContext& dist, const TrainOptions& o) {
  Communicator& world = dist.world();
  const bool root = dist.rank() == 0;

  const int local_ranks = std::max(1, dist.rank_info().local_size);
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_cpu_threads(o.threads > 0 ? o.threads : std::max(1, hardware / local_ranks));
  const std::unique_ptr<Device> device = open_device_on_every_rank(o.device, world, "train_gpt");
  if (!device) return 2;
  const std::string effective_config = effective_config_text("train_gpt", o.settings);
  if (root) std::printf("%s%s\n", effective_config.c_str(), device_line(o.device, *device).c_str());

  BatchRequest request;
  request.global = o.global_batch;
  request.micro = o.micro_batch;
  request.accumulation = o.grad_accum;
  request.data_parallel_ranks = world.size();
  request.seq_len = o.seq_len;
  request.names = train_gpt_batch_names();
  request.global_tokens = o.global_batch_tokens;
  const BatchPlan plan = plan_batch(request);

  const DataFormat data_format = parse_data_format(o.data_format, "--data-format");
  const TokenDataset train_data = open_token_dataset(o.data, data_format);
  std::optional<TokenDataset> val_data;
  const std::string val_path = o.val_data.empty() ? default_val_path(o.data.front()) : o.val_data;
  if (!o.val_data.empty() || std::filesystem::exists(val_path)) val_data.emplace(open_token_dataset({val_path}, data_format));
  const SampleLoader train_loader(train_data, o.seq_len, o.seed);
  std::optional<SampleLoader> val_loader;
  if (val_data) val_loader.emplace(*val_data, o.seq_len, o.seed, SampleOrder::kSequential);  // windows in file order
  // The same windows on any rank count: --micro-batch when given, not a micro-batch derived per rank count.
  const ValidationSet val_set{o.eval_batches, o.micro_batch.value_or(kDefaultMicroBatch)};

  // The data's tokenizer (or --tokenizer's); null when GPT-2 data comes without its vocabulary files.
  const TokenizerSpec tokenizer_spec = apply_tokenizer_flag(data_tokenizer(train_data, data_format), o.tokenizer);
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(tokenizer_spec);
  GptConfig config;
  config.vocab_size = o.vocab > 0 ? o.vocab : padded_vocab(tokenizer_spec.vocab_size);
  config.max_seq_len = o.seq_len;
  config.layers = o.layers;
  config.heads = o.heads;
  config.channels = o.dim;
  check_token_ids(train_data, config.vocab_size);  // before any kernel could index past the tables
  if (val_data) check_token_ids(*val_data, config.vocab_size);
  const CheckpointPolicy recompute = parse_checkpoint_policy(o.activation_checkpointing);
  const ShardingConfig sharding = sharding_config(o);
  if (!o.no_memory_check && !memory_fits(plan_config_of(config, sharding, plan, recompute), *device, local_ranks, world)) {
    return 3;
  }
  Gpt model(config);
  const std::vector<std::string> wrapped = apply_activation_checkpointing(model, recompute);
  ShardedEngine engine(model, *device, world, sharding, o.seed);
  Trainer trainer(engine);
  std::optional<SpikeDetector> spike_detector;  // --spike-guard
  if (o.spike_guard) {
    SpikeConfig spike;
    spike.window = o.spike_window;
    spike.warmup = std::min(spike.warmup, spike.window);
    spike.z = o.spike_z;
    spike_detector.emplace(spike);
    trainer.set_spike_detector(&*spike_detector);
  }
  SkippedSteps skipped(o.max_skipped_steps);
  int reloads = 0;  // times the run went back to its latest checkpoint after a streak of skipped steps
  if (const NvmeStore* store = engine.nvme_store()) {
    for (const std::string& notice : store->notices()) print_rank_notice(world.rank(), notice);
  }
  std::optional<MemoryProfiler> profiler;  // --memory-profile: samples every train step's phases
  if (!o.memory_profile.empty()) profiler.emplace(device->memory());
  const LrSchedule schedule{static_cast<float>(o.lr), o.warmup, o.steps, static_cast<float>(o.min_lr_ratio)};

  RunConfig run_config;
  add_gpt_config(run_config, config);
  add_batch_plan(run_config, plan);
  add_lr_schedule(run_config, schedule);
  add_tokenizer(run_config, tokenizer_spec);  // run.tokenizer_vocab: the rows an export keeps
  run_config.set_effective_config(effective_config);
  TrainingCheckpointer checkpointer(checkpoint_options(o), engine, world, run_config);
  TrainingProgress progress = checkpointer.resume();  // step 0 unless --resume found a checkpoint
  if (checkpointer.resumed_from() && progress.data_seed != o.seed && root) {
    const auto seed = [](std::uint64_t s) { return std::to_string(s); };
    warn(world.rank(), "--seed " + seed(o.seed) + " differs from the seed " + seed(progress.data_seed) +
                           " of the checkpoint being resumed. The weights and optimizer state come from the checkpoint "
                           "either way; the seed still picks the data order from here on (this epoch's windows may be "
                           "read twice or not at all) and the text sampled at the end. Pass --seed " +
                           seed(progress.data_seed) + " to continue the run exactly.");
  }
  progress.data_seed = o.seed;
  TrainingProgress resumed = progress;  // the loader continues at resumed.samples_seen

  const GemmCeiling ceiling = measure_gemm_ceiling(*device, 1024, 1024, 1024, 0.2);
  const double flops_per_token = gpt_training_flops_per_token(config, o.seq_len);
  if (root) {
    std::printf("train_gpt: GPT %s, %lld parameters, %d rank(s) x %s, BLAS core %s\n", config.to_string().c_str(),
                static_cast<long long>(model.parameter_count()), world.size(), device->name().c_str(),
                blas_core_name().c_str());
    std::printf("sharding: %s; activation checkpointing: %s (%zu modules)\n", engine.config().to_string().c_str(),
                o.activation_checkpointing.c_str(), wrapped.size());
    if (const NvmeStore* store = engine.nvme_store()) {
      std::printf("offload: %s, %s per rank\n", store->describe().c_str(), format_bytes(store->file_bytes()).c_str());
    }
    std::printf("data: %s (%lld tokens, %lld windows of %lld)%s\n", train_data.describe().c_str(),
                static_cast<long long>(train_data.num_tokens()),
                static_cast<long long>(train_loader.windows_per_epoch()), static_cast<long long>(o.seq_len),
                val_data ? (", validation: " + val_path).c_str() : "");
    std::printf("tokenizer: %s%s\n", tokenizer_spec.describe().c_str(),
                data_format != DataFormat::kDetect || train_data.tokenizer() || !o.tokenizer.empty()
                    ? ""
                    : " (the data records no tokenizer: read as llm.c GPT-2 tokens; for files of an older "
                      "tessera_prepare pass --tokenizer bytes or re-run it)");
    std::printf("batch: %s\n", plan.describe().c_str());
    std::printf("GEMM ceiling: %.1f GFLOP/s per rank (f32 1024^3); MFU below is training FLOP/s over ranks x it\n",
                ceiling.gflops);
    if (checkpointer.resumed_from()) {
      std::printf("resumed from %s at step %lld\n", checkpointer.resumed_from()->c_str(),
                  static_cast<long long>(progress.step));
    }
  }
  std::fflush(stdout);
  StepReporterConfig report;
  report.total_steps = o.steps;
  report.log_every = o.log_every;
  report.tokens_per_step = plan.global_tokens();
  report.flops_per_token = flops_per_token;
  report.ceiling_gflops = ceiling.gflops;
  report.metrics_path = o.metrics;
  if (checkpointer.resumed_from()) report.resumed_at = progress.step;
  report.style = progress_style(o.progress, dist.rank_info());
  StepReporter reporter(report, world, *device, profiler ? &*profiler : nullptr);
  if (val_loader) reporter.validation(progress.step, validation_loss(trainer, *val_loader, val_set));

  bool stopped = false;
  StateHealth last_health = StateHealth::kHealthy;  // of the last step taken, for a save after the loop
  // A stop signal that arrived after the last step's check (during the last validation, the summary
  // or the sample) saves the last step and stops, so a requeued job resumes at the end.
  const auto stop_after_last_step = [&] { return checkpointer.after_step(progress, last_health); };
  for (std::int64_t step = progress.step; step < o.steps && !stopped; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<MicroBatch> batches;
    for (std::int64_t a = 0; a < plan.accumulation; ++a) {
      const std::int64_t first = resumed.samples_seen + first_sample_index(step - resumed.step, a, world.rank(),
                                                                           plan.micro, world.size(), plan.accumulation);
      batches.push_back(load_batch(*device, train_loader, first, plan.micro));
    }
    const float lr = schedule.lr_at(step);
    if (profiler) {
      profiler->begin_step(step);
      engine.set_phase_observer([&profiler](const std::string& phase) { profiler->on_phase(phase); });
    }
    const StepResult r = trainer.train_step(batches, lr);
    engine.set_phase_observer({});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress.step = step + 1;
    progress.samples_seen += plan.global;
    progress.tokens_seen += plan.global_tokens();
    // Saves every --save-every steps, and on SIGTERM/SIGUSR1; a step skipped as non-finite (not a
    // spike) marks the saved state unhealthy, and retention keeps the newest healthy checkpoint.
    const StateHealth health = r.skipped && !r.spike ? StateHealth::kNonFinite : StateHealth::kHealthy;
    stopped = checkpointer.after_step(progress, health);
    reporter.saves(checkpointer.take_committed_saves(), o.async_checkpoint);
    last_health = health;
    if (stopped) reporter.line(stop_signal_line(o.checkpoint_dir, progress.step, o.steps));
    skipped.record(r);
    if (skipped.report_now()) {
      char text[64];
      std::snprintf(text, sizeof text, "step %5lld skipped: ", static_cast<long long>(step + 1));
      reporter.line(text + skip_reason(r, spike_detector ? spike_detector->last_reason() : "") + " (" +
                    std::to_string(skipped.consecutive()) + " in a row, " + std::to_string(skipped.total()) +
                    " in this run)");
    }
    if (!stopped && skipped.exhausted()) {
      const std::optional<TrainingProgress> back =
          o.spike_guard && reloads < kMaxReloads ? checkpointer.reload_last_healthy() : std::nullopt;
      if (!back) {
        reporter.finish();
        if (root) {
          std::fprintf(stderr, "%s", diverged_message(o, step + 1, skipped, reloads).c_str());
          std::fflush(stderr);
        }
        checkpointer.finish();
        return 4;
      }
      ++reloads;
      // Back to the checkpoint's weights, but the data goes on where this step stopped: the batches
      // of the skipped steps are not seen again.
      const std::int64_t samples_now = progress.samples_seen, tokens_now = progress.tokens_seen;
      progress = *back;
      progress.samples_seen = samples_now;
      progress.tokens_seen = tokens_now;
      progress.data_seed = o.seed;
      resumed = progress;
      char text[192];
      std::snprintf(text, sizeof text,
                    "step %5lld: %lld steps in a row skipped; reloaded the checkpoint of step %lld and moved the data "
                    "past the skipped batches (to sample %lld)",
                    static_cast<long long>(step + 1), static_cast<long long>(skipped.consecutive()),
                    static_cast<long long>(back->step), static_cast<long long>(samples_now));
      reporter.line(text);
      reporter.went_back(back->step);
      skipped.reset_streak();
      step = back->step - 1;  // the loop's ++step runs the checkpoint's next step
      continue;
    }
    reporter.step_done(step + 1, r, lr, seconds, skipped.total());
    if (!stopped && val_loader && o.eval_every > 0 && ((step + 1) % o.eval_every == 0 || step + 1 == o.steps)) {
      reporter.validation(step + 1, validation_loss(trainer, *val_loader, val_set));
    }
  }
  if (!stopped && stop_after_last_step()) {
    stopped = true;
    reporter.line(stop_signal_line(o.checkpoint_dir, progress.step, o.steps));
  }
  checkpointer.finish();
  reporter.saves(checkpointer.take_committed_saves(), o.async_checkpoint);
  const std::vector<std::string> plots = reporter.finish();
  if (root && !plots.empty()) {
    std::printf("metrics: %s; plots: %s, %s\n", o.metrics.c_str(), plots[0].c_str(), plots[1].c_str());
  }
  if (stopped) return 0;
  if (root) {
    std::printf("\nmemory of rank 0:\n%s",
                (profiler ? profiler->summary() : memory_summary(device->memory())).c_str());
  }
  if (profiler) {
    // Step 1 (the second) is the first steady-state step: compare the last one with it.
    const std::int64_t first = std::min<std::int64_t>(1, o.steps - 1), last = o.steps - 1;
    for (const MemoryLeak& leak : profiler->check_leaks(first, last)) warn(dist.rank(), "memory leak? " + leak.message());
    const auto files = write_memory_profile(*profiler, o.memory_profile, dist.rank(), first);
    if (root) std::printf("memory profile: %s (and the other ranks' files beside it)\n", files.front().c_str());
  }

  if (o.sample_tokens > 0) {
    // Every rank runs the forward (its units may be sharded); equal seeds draw equal tokens.
    Rng rng(o.seed);
    SamplingOptions sampling;
    sampling.new_tokens = o.sample_tokens;
    sampling.temperature = static_cast<float>(o.temperature);
    sampling.vocab_limit = tokenizer_spec.vocab_size;
    const auto logits_of = [&](Context& ctx, const Tensor& tokens) { return engine.forward(ctx, tokens); };
    // Without vocabulary files (GPT-2 data) the sample starts at end-of-text and prints as ids.
    const std::vector<std::int32_t> prompt =
        tokenizer ? tokenizer->encode("The ") : std::vector<std::int32_t>{static_cast<std::int32_t>(std::min<std::int64_t>(tokenizer_spec.vocab_size, config.vocab_size) - 1)};
    const auto tokens = sample_tokens(logits_of, config, *device, prompt, sampling, rng);
    if (root && tokenizer) {
      std::printf("\nsample:\n---\nThe %s\n---\n", printable_text(tokenizer->decode(tokens)).c_str());
    } else if (root) {
      std::string ids;
      for (const std::int32_t t : tokens) ids += std::to_string(t) + " ";
      std::printf("\nsample (token ids; pass --tokenizer DIR with GPT-2's vocab.json and merges.txt to decode):\n%s\n",
                  ids.c_str());
    }
  }
  std::fflush(stdout);
  if (stop_after_last_step() && root) {
    std::printf("%s\n", stop_signal_line(o.checkpoint_dir, progress.step, o.steps).c_str());
    std::fflush(stdout);
  }
  return 0;
}

// Parses the options; errors of the run name the flag (SettingNames) and, for a value from the
// --config file, its file and line.
int train(DistributedContext& dist) {
  const std::optional<TrainOptions> parsed = parse_train_options(dist.argc(), dist.argv(), dist.rank() == 0);
  if (!parsed) return 0;
  return locate_config_errors(parsed->settings, [&] {
    return reword_setting_errors(train_gpt_setting_names(), [&] { return run(dist, *parsed); });
  });
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, tessera::train);
}
