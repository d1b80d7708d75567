// bench_sharding: ZeRO stages 0-3 on the small GPT across the ranks of an mpirun job, with each
// gradient reduce dtype asked for. Prints per (reduce dtype, stage): ms/step split into forward,
// backward and the step (the tail of the gradient reductions, the norm, the optimizer and the
// publishing of the parameters), tokens/s (all ranks), the per-rank model-state bytes measured by
// the tracker next to the ZeRO formula (docs/ARCHITECTURE.md), and the step time against ZeRO-0
// with the first reduce dtype listed.
//
// Every configuration is built first; then each timed round runs one step of every configuration in
// turn (the first one rotating), so the machine's drift — other processes, frequency — reaches all
// of them alike and the ratios compare like with like.
//
// Usage: mpirun -np 2 bench_sharding [--reduce-dtype f32,bf16] [--stages 0,1,2,3] [--steps 5]
//        [--micro-batch 4] [--threads 1] [--prefetch 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "flags/program_options.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

using benchmarks::median;
using benchmarks::random_batch;
using Clock = std::chrono::steady_clock;

struct Options {
  int threads = 1, steps = 5, prefetch = 1;
  std::int64_t micro = 4;
  std::vector<DType> reduce{DType::kF32, DType::kBF16};
  std::vector<int> stages{0, 1, 2, 3};
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// Throws std::invalid_argument naming the flag; returns false after printing --help.
bool parse(int argc, char** argv, Options& o) {
  std::string reduce = "f32,bf16", stages = "0,1,2,3";
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("reduce-dtype", value_with_default(&reduce),
       "comma-separated dtypes the gradients travel in (f32, bf16, f16); each gets a row per stage")
      ("stages", value_with_default(&stages), "comma-separated ZeRO stages (0-3)")
      ("steps", value_with_default(&o.steps), "timed steps per configuration (median), after one warm-up")
      ("micro-batch", value_with_default(&o.micro), "sequences per rank and step")
      ("threads", value_with_default(&o.threads), "CPU threads per rank")
      ("prefetch", value_with_default(&o.prefetch), "units gathered ahead (ZeRO-3)");
  // clang-format on
  ProgramOptions program("bench_sharding",
                         "bench_sharding: ZeRO stages 0-3 x gradient reduce dtypes, interleaved step by step\n"
                         "Usage: mpirun -np 2 bench_sharding [options]");
  program.add(options);
  if (!program.parse(argc, argv)) return false;
  // The program's own checks, located in a --config file when it set the value.
  program.locate_errors([&] {
    o.reduce.clear();
    for (const std::string& d : split_list(reduce)) {
      const DType dtype = parse_dtype(d, "--reduce-dtype");
      if (!is_floating(dtype)) throw std::invalid_argument("--reduce-dtype " + d + ": use f32, bf16 or f16");
      o.reduce.push_back(dtype);
    }
    o.stages.clear();
    for (const std::string& s : split_list(stages)) {
      const bool digit = s.size() == 1 && s[0] >= '0' && s[0] <= '9';
      const int stage = digit ? s[0] - '0' : -1;
      if (stage < 0 || stage > 3) throw std::invalid_argument("--stages " + s + ": ZeRO stages are 0, 1, 2 and 3");
      o.stages.push_back(stage);
    }
    if (o.reduce.empty()) throw std::invalid_argument("--reduce-dtype '" + reduce + "': name at least one dtype");
    if (o.stages.empty()) throw std::invalid_argument("--stages '" + stages + "': name at least one stage");
    if (o.steps < 1) throw std::invalid_argument("--steps " + std::to_string(o.steps) + ": must be >= 1");
    if (o.micro < 1) throw std::invalid_argument("--micro-batch " + std::to_string(o.micro) + ": must be >= 1");
    if (o.threads < 1) throw std::invalid_argument("--threads " + std::to_string(o.threads) + ": must be >= 1");
  });
  return true;
}

// One (reduce dtype, stage) configuration: its own device, model, engine and trainer, and the times
// of its timed steps split at the phases the engine reports.
struct Config {
  DType reduce = DType::kF32;
  int stage = 0;
  std::unique_ptr<Device> device;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<ShardedEngine> engine;
  std::unique_ptr<Trainer> trainer;
  Clock::time_point loss_at, last_backward_at, step_at;
  std::vector<double> total, forward, backward, step;  // seconds per timed step
};

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The slowest rank sets the pace: the max over ranks of each rank's median, in ms.
double slowest_median_ms(Communicator& world, const std::vector<double>& times) {
  float ms = static_cast<float>(median(times) * 1e3);
  world.all_reduce(Span(&ms, 1), DType::kF32, ReduceOp::kMax).wait();
  return ms;
}

int bench(DistributedContext& ctx, const Options& o) {
  set_cpu_threads(o.threads);
  const GptConfig small{8192, 256, 6, 6, 384};
  Communicator& world = ctx.world();
  const int n = world.size();
  std::vector<Config> configs;
  for (DType reduce : o.reduce) {
    for (int stage : o.stages) {
      Config& c = configs.emplace_back();
      c.reduce = reduce;
      c.stage = stage;
      c.device = make_device(DeviceChoice::kCpu);
      c.model = std::make_unique<Gpt>(small);
      ShardingConfig sharding;
      sharding.stage = parse_zero_stage(stage);
      sharding.precision.reduce_dtype = reduce;
      sharding.prefetch_units = o.prefetch;
      c.engine = std::make_unique<ShardedEngine>(*c.model, *c.device, world, sharding, 1);
      c.trainer = std::make_unique<Trainer>(*c.engine);
    }
  }
  std::vector<MicroBatch> batches;  // per configuration (each on its own device)
  for (Config& c : configs) {
    batches.push_back(random_batch(*c.device, small, o.micro, 100 + static_cast<std::uint64_t>(ctx.rank())));
    c.trainer->train_step({batches.back()}, 1e-4f);  // warm-up: records the unit order, first touches
    c.engine->set_phase_observer([&c](const std::string& phase) {
      const auto now = Clock::now();
      if (phase == "loss")
        c.loss_at = now;
      else if (phase == "step")
        c.step_at = now;
      else if (phase.rfind("backward", 0) == 0)
        c.last_backward_at = now;
    });
  }
  for (int round = 0; round < o.steps; ++round) {
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const std::size_t k = (i + static_cast<std::size_t>(round)) % configs.size();
      Config& c = configs[k];
      world.barrier().wait();
      const auto t0 = Clock::now();
      c.trainer->train_step({batches[k]}, 1e-4f);
      const auto t1 = Clock::now();
      c.total.push_back(seconds(t0, t1));
      c.forward.push_back(seconds(t0, c.loss_at));
      c.backward.push_back(seconds(c.loss_at, c.last_backward_at));
      c.step.push_back(seconds(c.last_backward_at, t1));
    }
  }

  if (ctx.rank() == 0) {
    std::string reduce_list;
    for (DType d : o.reduce) reduce_list += std::string(reduce_list.empty() ? "" : ",") + dtype_name(d);
    std::printf(
        "bench_sharding: GPT %s, %d ranks x %d threads, micro %lld per rank, reduce %s, prefetch %d, "
        "%d timed steps per configuration (median, interleaved) after 1 warm-up\n\n",
        small.to_string().c_str(), n, o.threads, static_cast<long long>(o.micro), reduce_list.c_str(), o.prefetch,
        o.steps);
    const std::string versus = std::string("vs 0/") + dtype_name(configs.front().reduce);
    std::printf("%-6s %-5s %9s %8s %8s %8s %10s %14s %14s %9s %12s %10s\n", "reduce", "stage", "ms/step", "fwd", "bwd",
                "step", "tokens/s", "state/rank", "formula", "vs formula", "peak total", versus.c_str());
  }
  std::vector<double> step_ms;
  for (Config& c : configs) step_ms.push_back(slowest_median_ms(world, c.total));
  // The reference: ZeRO-0 with the first reduce dtype, when it was run.
  double reference_ms = 0.0;
  for (std::size_t k = 0; k < configs.size() && reference_ms == 0.0; ++k) {
    if (configs[k].stage == 0 && configs[k].reduce == configs.front().reduce) reference_ms = step_ms[k];
  }
  for (std::size_t k = 0; k < configs.size(); ++k) {
    Config& c = configs[k];
    const double ms = step_ms[k];
    const double fwd = slowest_median_ms(world, c.forward), bwd = slowest_median_ms(world, c.backward),
                 stp = slowest_median_ms(world, c.step);
    std::int64_t padded = 0, shard = 0;
    for (const auto& u : c.engine->units()) {
      padded += u->layout().padded_numel();
      shard += u->layout().shard_numel();
    }
    const int st = c.stage;
    const std::int64_t formula =
        (st < 3 ? 4 * padded : 4 * shard) + (st < 2 ? 4 * padded : 4 * shard) + (st == 0 ? 8 * padded : 8 * shard);
    const MemoryTracker& m = c.device->memory();
    const std::int64_t measured = m.current(MemoryCategory::kParameters) + m.current(MemoryCategory::kGradients) +
                                  m.current(MemoryCategory::kOptimizerState);
    if (ctx.rank() == 0) {
      const double tokens = static_cast<double>(o.micro * small.max_seq_len * n);
      char versus[32] = "-";
      if (reference_ms > 0) std::snprintf(versus, sizeof versus, "%.2fx", ms / reference_ms);
      std::printf("%-6s %-5d %9.1f %8.1f %8.1f %8.1f %10.0f %14s %14s %8.2f%% %12s %10s\n", dtype_name(c.reduce), st,
                  ms, fwd, bwd, stp, tokens / (ms * 1e-3), format_bytes(measured).c_str(),
                  format_bytes(formula).c_str(),
                  100.0 * static_cast<double>(measured - formula) / static_cast<double>(formula),
                  format_bytes(m.peak_total()).c_str(), versus);
    }
  }
  if (ctx.rank() == 0) {
    std::printf(
        "\nfwd: start of the step to the loss; bwd: to the last module's backward; step: the rest (the "
        "last gradient reductions, the norm, the optimizer, publishing); each the max over ranks of the "
        "rank's median\n");
    std::printf(
        "formula: params 4P (stages 0-2) or 4P/N (3); grads 4P (0-1) or 4P/N (2-3); Adam m,v 8P (0) or "
        "8P/N (1-3); P = parameters padded per unit to a multiple of N\n");
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::Options options;
  try {
    if (!tessera::parse(argc, argv, options)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_sharding: %s\n", e.what());
    return 1;
  }
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv,
                                  [&](tessera::DistributedContext& ctx) { return tessera::bench(ctx, options); });
}
