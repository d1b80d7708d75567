// bench_train: single-process GPT training throughput against the machine's sgemm ceiling measured
// in the same run, and where each step's time goes. Per config and trainer — LocalTrainer (the
// reference) and the sharded path train_gpt runs (ShardedEngine at ZeRO-0 + Trainer, one rank) —
// it prints ms/step, tokens/s, the achieved training GFLOP/s (6 x matmul params x tokens +
// attention) and its ratio to the ceiling, then a per-phase breakdown of the median (or fastest)
// step measured in the same process: the device is a TimedDevice, so every kernel the real step calls is timed
// by group (GEMMs, attention, element-wise, loss, optimizer, conversion), and the framework
// overhead is the step time minus the sum of its kernel times — of it, the time spent allocating,
// freeing, zero-filling and copying is shown separately; the rest is bookkeeping.
//
// On a machine shared with other work, the speed of the cores moves by tens of percent from second to
// second, so a ratio of one step to a ceiling measured minutes apart mostly measures that drift. The
// "paired" column therefore also samples the ceiling's GEMM right before and after every timed step
// and gives the median over the steps of the step's GFLOP/s over the faster of its two samples.
// The sharded path runs in each compute dtype asked for (--compute-dtype f32 bf16): bf16 rows show
// what bf16 compute costs on the CPU (its GEMMs widen bf16 panels to f32) and what it saves (peak
// and activation bytes).
// Usage: bench_train [--threads N] [--steps N] [--warmup N] [--config tiny|small|llama]...
//                    [--trainer local|sharded|both] [--compute-dtype f32|bf16]... [--pick median|fastest]
#include <sys/resource.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/modules/gpt_flops.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/gemm_ceiling.hpp"
#include "tessera/runtime/timed_device.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/local_trainer.hpp"
#include "tessera/training/trainer.hpp"

namespace po = boost::program_options;

namespace tessera {
namespace {

using benchmarks::median;
using benchmarks::random_batch;

// How long each ceiling sample beside a timed step runs its GEMM (the best repetition counts).
constexpr double kCeilingSampleSeconds = 0.05;

struct BenchConfig {
  std::string name;
  GptConfig model;
  std::int64_t batch;
};

const BenchConfig kConfigs[] = {
    {"tiny", {8192, 256, 4, 4, 256}, 4},
    {"small", {8192, 256, 6, 6, 384}, 4},
    // The small GPT's width and depth as a Llama: grouped-query attention (6 heads, 2 key/value
    // heads), SwiGLU of 1024 (its default for C = 384), untied head.
    {"llama", GptConfig::llama(8192, 256, 6, 6, 384, 2), 4},
};

struct Args {
  int threads = 2, steps = 5, warmup = 1;
  std::vector<std::string> configs{"tiny", "small", "llama"};
  std::string trainer = "both";
  std::vector<std::string> compute_dtypes{"f32", "bf16"};  // of the sharded trainer (LocalTrainer: f32)
  std::string pick = "median";
};

// One timed step: wall time, kernel times, memory-operation times and the page faults the process
// took (fresh pages the kernel had to map and zero).
struct StepTiming {
  double seconds = 0.0;
  KernelTimes kernels;
  MemoryOpTimes memory;
  std::int64_t page_faults = 0;
  double cpu_seconds = 0.0;       // CPU time of all threads, user + system
  double system_seconds = 0.0;    // of it, the kernel's for this process (faults, mmap, munmap)
  std::int64_t cached_bytes = 0;  // held free by the device's allocator after the timed steps
  double ceiling_gflops = 0.0;    // the faster of the ceiling samples just before and after the step
};

// Page faults, and user and system (kernel) CPU seconds of this process so far (all threads).
struct ProcessUsage {
  std::int64_t page_faults = 0;
  double user_seconds = 0.0, system_seconds = 0.0;
};

ProcessUsage process_usage_so_far() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {usage.ru_minflt + usage.ru_majflt, seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

struct RunResult {
  std::string config, trainer;
  DType compute = DType::kF32;
  StepTiming shown;  // the step of median (or least) wall time
  double gflops = 0.0, tokens_per_second = 0.0;
  double paired_ratio = 0.0;  // median over the timed steps of GFLOP/s / the step's ceiling_gflops
  std::int64_t peak_bytes = 0;
  std::int64_t activation_peak_bytes = 0;
};

// Parses the command line; returns false (after printing help) when there is nothing to run.
bool parse(int argc, char** argv, Args& a) {
  po::options_description options("bench_train options");
  // clang-format off
  options.add_options()
      ("threads", po::value(&a.threads)->default_value(a.threads), "OpenMP threads (each OpenBLAS call runs on one)")
      ("steps", po::value(&a.steps)->default_value(a.steps), "timed steps per config and trainer")
      ("pick", po::value(&a.pick)->default_value(a.pick),
       "which timed step is shown: median, or fastest (on a machine shared with other work, whose load "
       "only ever slows a step down)")
      ("warmup", po::value(&a.warmup)->default_value(a.warmup), "untimed steps before them")
      ("config", po::value(&a.configs)->multitoken(), "tiny, small and/or llama (default: all three)")
      ("trainer", po::value(&a.trainer)->default_value(a.trainer),
       "local (LocalTrainer), sharded (ShardedEngine ZeRO-0 + Trainer, as train_gpt) or both")
      ("compute-dtype", po::value(&a.compute_dtypes)->multitoken(),
       "the sharded trainer's compute dtypes, f32 and/or bf16 (default: both)")
      ("help,h", "print this help");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << "bench_train: GPT training steps against the sgemm ceiling, with a per-phase breakdown\n"
              << options << "\n";
    return false;
  }
  po::notify(vm);
  if (a.threads < 1) throw std::invalid_argument("--threads " + std::to_string(a.threads) + ": must be >= 1");
  if (a.steps < 1) throw std::invalid_argument("--steps " + std::to_string(a.steps) + ": must be >= 1");
  if (a.warmup < 0) throw std::invalid_argument("--warmup " + std::to_string(a.warmup) + ": must be >= 0");
  if (a.pick != "median" && a.pick != "fastest") {
    throw std::invalid_argument("--pick " + a.pick + ": choose median or fastest");
  }
  if (a.trainer != "local" && a.trainer != "sharded" && a.trainer != "both") {
    throw std::invalid_argument("--trainer " + a.trainer + ": choose local, sharded or both");
  }
  for (const std::string& d : a.compute_dtypes) {
    if (d != "f32" && d != "bf16") throw std::invalid_argument("--compute-dtype " + d + ": choose f32 or bf16");
  }
  for (const std::string& c : a.configs) {
    bool known = false;
    for (const BenchConfig& bc : kConfigs) known = known || bc.name == c;
    if (!known) throw std::invalid_argument("--config " + c + ": choose tiny or small");
  }
  return true;
}

// Runs warm-up then timed steps of `step`, each timed whole and by the device's counters, with a
// ceiling sample (GFLOP/s from `sample_ceiling`) before the first timed step and after each one.
template <typename Step, typename Sample>
std::vector<StepTiming> time_steps(TimedDevice& device, const Args& args, Step&& step, Sample&& sample_ceiling) {
  for (int s = 0; s < args.warmup; ++s) step();
  std::vector<StepTiming> timings;
  double ceiling_before = sample_ceiling();
  for (int s = 0; s < args.steps; ++s) {
    device.synchronize();
    device.reset_times();
    const ProcessUsage before = process_usage_so_far();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    device.synchronize();
    StepTiming t;
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ProcessUsage after = process_usage_so_far();
    t.page_faults = after.page_faults - before.page_faults;
    t.system_seconds = after.system_seconds - before.system_seconds;
    t.cpu_seconds = after.user_seconds - before.user_seconds + t.system_seconds;
    t.kernels = device.kernel_times();
    t.memory = device.memory_op_times();
    const double ceiling_after = sample_ceiling();
    t.ceiling_gflops = std::max(ceiling_before, ceiling_after);
    ceiling_before = ceiling_after;
    timings.push_back(t);
  }
  const auto cached = static_cast<std::int64_t>(device.cached_bytes());
  for (StepTiming& t : timings) t.cached_bytes = cached;
  return timings;
}

RunResult run(TimedDevice& device, const BenchConfig& bc, const std::string& trainer_kind, DType compute,
              Communicator& world, const Args& args, GemmCeilingProbe& ceiling_probe) {
  device.memory().reset_peaks();
  RunResult r;
  r.config = bc.name;
  r.trainer = trainer_kind;
  r.compute = compute;
  Gpt model(bc.model);
  const std::vector<MicroBatch> batch{random_batch(device, bc.model, bc.batch, 7)};
  auto sample_ceiling = [&] { return ceiling_probe.measure(kCeilingSampleSeconds).gflops; };
  std::vector<StepTiming> timings;
  if (trainer_kind == "local") {
    materialize_parameters(model, device, 1);
    LocalTrainer trainer(model, device, AdamWConfig{}, 1.0f);
    timings = time_steps(
        device, args, [&] { trainer.step(batch, 1e-4f); }, sample_ceiling);
  } else {
    ShardingConfig config;
    config.stage = ZeroStage::kStage0;
    config.precision.compute_dtype = compute;
    config.precision.param_dtype = compute;
    ShardedEngine engine(model, device, world, config, 1);
    Trainer trainer(engine);
    timings = time_steps(
        device, args, [&] { trainer.train_step(batch, 1e-4f); }, sample_ceiling);
  }
  const double tokens = static_cast<double>(bc.batch * bc.model.max_seq_len);
  const double flops_per_step = gpt_training_flops_per_token(bc.model, bc.model.max_seq_len) * tokens;
  std::vector<double> ratios;
  for (const StepTiming& t : timings) ratios.push_back(flops_per_step / t.seconds / 1e9 / t.ceiling_gflops);
  r.paired_ratio = median(ratios);
  std::sort(timings.begin(), timings.end(),
            [](const StepTiming& a, const StepTiming& b) { return a.seconds < b.seconds; });
  r.shown = args.pick == "fastest" ? timings.front() : timings[(timings.size() - 1) / 2];
  r.tokens_per_second = tokens / r.shown.seconds;
  r.gflops = flops_per_step / r.shown.seconds / 1e9;
  r.peak_bytes = device.memory().peak_total();
  r.activation_peak_bytes = device.memory().peak(MemoryCategory::kActivations);
  return r;
}

// "local", "sharded f32", "sharded bf16".
std::string trainer_label(const RunResult& r) {
  return r.trainer == "local" ? r.trainer : r.trainer + " " + dtype_name(r.compute);
}

void print_breakdown(const std::vector<RunResult>& results, const std::string& pick) {
  std::printf(
      "\nper-phase breakdown of the %s step, ms (%% of the step); overhead = step - sum of kernels,\n"
      "of which alloc (allocate + free), fill (zero-fill) and copy are the framework's memory operations\n\n",
      pick.c_str());
  std::printf("%-6s %-13s %8s %15s %15s %15s %15s %15s %15s | %8s %7s %7s %7s\n", "config", "trainer", "step",
              "gemm", "attention", "elementwise", "loss", "optimizer", "overhead", "alloc", "fill", "copy", "other");
  for (const RunResult& r : results) {
    const StepTiming& t = r.shown;
    const double step_ms = t.seconds * 1e3;
    auto cell = [&](double seconds) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%7.1f (%4.1f%%)", seconds * 1e3, 100.0 * seconds / t.seconds);
      return std::string(buf);
    };
    const double overhead = t.seconds - t.kernels.total_seconds();
    const double alloc = t.memory.seconds_of(MemoryOp::kAllocate) + t.memory.seconds_of(MemoryOp::kFree);
    const double fill = t.memory.seconds_of(MemoryOp::kFill), copy = t.memory.seconds_of(MemoryOp::kCopy);
    const double optimizer =
        t.kernels.seconds_of(KernelGroup::kOptimizer) + t.kernels.seconds_of(KernelGroup::kConversion);
    std::printf("%-6s %-13s %8.1f %15s %15s %15s %15s %15s %15s | %8.2f %7.2f %7.2f %7.2f\n", r.config.c_str(),
                trainer_label(r).c_str(), step_ms, cell(t.kernels.seconds_of(KernelGroup::kGemm)).c_str(),
                cell(t.kernels.seconds_of(KernelGroup::kAttention)).c_str(),
                cell(t.kernels.seconds_of(KernelGroup::kElementwise)).c_str(),
                cell(t.kernels.seconds_of(KernelGroup::kLoss)).c_str(), cell(optimizer).c_str(), cell(overhead).c_str(),
                alloc * 1e3, fill * 1e3, copy * 1e3, (overhead - alloc - fill - copy) * 1e3);
  }
  std::printf(
      "\ngemm: linear layers and the LM head (bias and fused epilogues included); elementwise: embedding,\n"
      "layernorm, GELU, residual adds; loss: cross-entropy and its sum; optimizer: gradient norm, clipping,\n"
      "AdamW (and dtype conversion: bf16 micro-batch gradients into the f32 accumulator, compute copies)\n");
}

int bench(DistributedContext& ctx, const Args& args) {
  if (ctx.world_size() != 1) {
    throw std::invalid_argument("bench_train runs in one process (world of " + std::to_string(ctx.world_size()) +
                                "); run it without mpirun, or use bench_sharding for several ranks");
  }
  set_cpu_threads(args.threads);
  TimedDevice device(make_device(DeviceChoice::kCpu));

  // The ceiling: the best of a few GEMM shapes, measured before and after the steps (the best of
  // both), so the ratio below is against the machine's best and a slow spell on a shared machine
  // during one measurement does not inflate it.
  auto measure_ceiling = [&device] {
    GemmCeiling best = measure_gemm_ceiling(device, 1024, 1024, 1024, 0.5);
    for (auto [m, n, k] : {std::tuple{2048L, 2048L, 2048L}, std::tuple{1024L, 1536L, 384L}}) {
      const GemmCeiling c = measure_gemm_ceiling(device, m, n, k, 0.5);
      if (c.gflops > best.gflops) best = c;
    }
    return best;
  };
  GemmCeiling ceiling = measure_ceiling();
  // The samples beside the steps time the fastest shape on a device of their own, so their buffers
  // stay out of the timed device's allocator (its cache and peaks are columns of the table).
  const std::unique_ptr<Device> sampler = make_device(DeviceChoice::kCpu);
  GemmCeilingProbe ceiling_probe(*sampler, ceiling.m, ceiling.n, ceiling.k);
  std::vector<std::string> trainers;
  if (args.trainer != "sharded") trainers.push_back("local");
  if (args.trainer != "local") trainers.push_back("sharded");
  std::vector<RunResult> results;
  std::vector<const BenchConfig*> result_configs;
  for (const BenchConfig& bc : kConfigs) {
    if (std::find(args.configs.begin(), args.configs.end(), bc.name) == args.configs.end()) continue;
    for (const std::string& trainer : trainers) {
      const std::vector<std::string> dtypes = trainer == "local" ? std::vector<std::string>{"f32"} : args.compute_dtypes;
      for (const std::string& dtype : dtypes) {
        results.push_back(run(device, bc, trainer, parse_dtype(dtype, "--compute-dtype"), ctx.world(), args,
                              ceiling_probe));
        result_configs.push_back(&bc);
      }
    }
  }
  const GemmCeiling after = measure_ceiling();
  if (after.gflops > ceiling.gflops) ceiling = after;

  std::printf("bench_train: %d threads, %d timed steps (%s shown) after %d warm-up, OpenBLAS core %s\n",
              args.threads, args.steps, args.pick.c_str(), args.warmup, blas_core_name().c_str());
  std::printf(
      "sgemm ceiling: %.1f GFLOP/s (the kernels' gemm %ldx%ldx%ld, best of 3 shapes, before and after the steps)\n",
      ceiling.gflops, static_cast<long>(ceiling.m), static_cast<long>(ceiling.n), static_cast<long>(ceiling.k));
  std::printf(
      "trainer local: LocalTrainer (f32); sharded f32|bf16: ShardedEngine ZeRO-0 + Trainer on 1 rank (train_gpt's "
      "path) in that compute dtype\n\n");
  std::printf("%-6s %-13s %-52s %10s %10s %12s %12s %8s %8s %10s %9s %10s %12s %8s %8s\n", "config", "trainer",
              "model", "ms/step", "tokens/s", "train GF/s", "sgemm GF/s", "ratio", "paired", "peak MiB", "act MiB",
              "cache MiB", "faults/step", "cpu ms", "sys ms");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const RunResult& r = results[i];
    const BenchConfig& bc = *result_configs[i];
    std::printf(
        "%-6s %-13s %-52s %10.1f %10.0f %12.1f %12.1f %7.1f%% %7.1f%% %10.1f %9.1f %10.1f %12lld %8.1f %8.1f\n",
        bc.name.c_str(), trainer_label(r).c_str(), (bc.model.to_string() + " B=" + std::to_string(bc.batch)).c_str(),
        r.shown.seconds * 1e3, r.tokens_per_second, r.gflops, ceiling.gflops, 100.0 * r.gflops / ceiling.gflops,
        100.0 * r.paired_ratio, static_cast<double>(r.peak_bytes) / (1 << 20),
        static_cast<double>(r.activation_peak_bytes) / (1 << 20), static_cast<double>(r.shown.cached_bytes) / (1 << 20),
        static_cast<long long>(r.shown.page_faults), r.shown.cpu_seconds * 1e3, r.shown.system_seconds * 1e3);
  }
  std::printf(
      "\nratio: the shown step's GF/s over the sgemm ceiling above; paired: the median over the timed steps\n"
      "of a step's GF/s over the faster of two %.0f ms samples of the ceiling's GEMM taken just before and\n"
      "after it (on a shared machine the cores' speed drifts between the ceiling runs and the steps)\n",
      kCeilingSampleSeconds * 1e3);
  std::printf(
      "peak MiB: the trackers' simultaneous peak (Storage bytes); act MiB: of it, the peak of activations\n"
      "(kept for backward, their gradients, logits); cache MiB: free blocks the device's\n"
      "allocator holds between steps; faults/step: page faults of the shown step (fresh pages mapped); cpu ms:\n"
      "its CPU time over all threads (user + system; less sensitive than ms/step to other load on the\n"
      "machine), sys ms: of it, the kernel's (page faults, mmap/munmap)\n");
  print_breakdown(results, args.pick);
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::Args args;
  try {
    if (!tessera::parse(argc, argv, args)) return 0;  // --help: nothing else runs
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s (see --help)\n", e.what());
    return 2;
  }
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv,
                                  [&](tessera::DistributedContext& ctx) { return tessera::bench(ctx, args); });
}
