// bench_sharding: ZeRO stages 0-3 on the small GPT across the ranks of an mpirun job, with each
// gradient reduce dtype asked for, and tensor parallelism (Megatron-LM's, with and without sequence
// parallelism) composed with them.
//
// Table 1, per (reduce dtype, stage) without tensor parallelism: ms/step split into forward,
// backward and the step (the tail of the gradient reductions, the norm, the optimizer and the
// publishing of the parameters), tokens/s (all ranks), the per-rank model-state bytes measured by
// the tracker next to the ZeRO formula (docs/ARCHITECTURE.md), and the step time against ZeRO-0
// with the first reduce dtype listed.
//
// Table 2, when --tp names a size above 1, per (reduce dtype, stage, tp, sequence parallelism):
// tp ranks per tensor-parallel group x N/tp data-parallel ranks, the model built over the tensor-
// parallel group and the engine over the data-parallel one (sharding/tensor_parallel_mesh.hpp).
// Beside the times: the bytes each rank sends per step on each group (counting_communicator.hpp),
// and the model state and peak activations the device's tracker measured. The micro-batch is per
// data-parallel rank: a tensor-parallel group shares one, so tp 2 x dp 2 steps half the sequences
// dp 4 does, and tokens/s counts each group's sequences once.
//
// Every configuration is built first; then each timed round runs one step of every configuration in
// turn (the first one rotating), so the machine's drift — other processes, frequency — reaches all
// of them alike and the ratios compare like with like.
//
// Usage: mpirun -np 2 bench_sharding [--reduce-dtype f32,bf16] [--stages 0,1,2,3] [--steps 5]
//        [--micro-batch 4] [--threads 1] [--prefetch 1] [--tp 1,2] [--sequence-parallel off,on]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "counting_communicator.hpp"
#include "flags/program_options.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/sharding/tensor_parallel_mesh.hpp"
#include "tessera/training/losses/token_cross_entropy.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

using benchmarks::CountingCommunicator;
using benchmarks::median;
using benchmarks::random_batch;
using Clock = std::chrono::steady_clock;

struct Options {
  int threads = 1, steps = 5, prefetch = 1;
  std::int64_t micro = 4;
  std::vector<DType> reduce{DType::kF32, DType::kBF16};
  std::vector<int> stages{0, 1, 2, 3};
  std::vector<int> tp{1};
  std::vector<bool> sequence_parallel{false, true};  // the variants of each tp > 1
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
  std::string reduce = "f32,bf16", stages = "0,1,2,3", tp = "1", sequence_parallel = "off,on";
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("reduce-dtype", value_with_default(&reduce),
       "comma-separated dtypes the gradients travel in (f32, bf16, f16); each gets a row per stage")
      ("stages", value_with_default(&stages), "comma-separated ZeRO stages (0-3)")
      ("tp", value_with_default(&tp),
       "comma-separated tensor-parallel sizes (each must divide the ranks and the model's 6 heads); a size "
       "above 1 adds the tensor-parallel table, in which size 1 is the data-parallel baseline")
      ("sequence-parallel", value_with_default(&sequence_parallel),
       "comma-separated: off, on; each tensor-parallel size above 1 gets a row per value")
      ("steps", value_with_default(&o.steps), "timed steps per configuration (median), after one warm-up")
      ("micro-batch", value_with_default(&o.micro),
       "sequences per data-parallel rank and step (the ranks of a tensor-parallel group share them)")
      ("threads", value_with_default(&o.threads), "CPU threads per rank")
      ("prefetch", value_with_default(&o.prefetch), "units gathered ahead (ZeRO-3)");
  // clang-format on
  ProgramOptions program("bench_sharding",
                         "bench_sharding: ZeRO stages 0-3 x gradient reduce dtypes x tensor parallelism, "
                         "interleaved step by step\n"
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
    o.tp.clear();
    for (const std::string& t : split_list(tp)) {
      const bool digits = t.size() <= 3 && t.find_first_not_of("0123456789") == std::string::npos;
      const int size = digits ? std::stoi(t) : 0;
      if (size < 1) throw std::invalid_argument("--tp " + t + ": tensor-parallel sizes are whole numbers >= 1");
      if (std::find(o.tp.begin(), o.tp.end(), size) == o.tp.end()) o.tp.push_back(size);
    }
    o.sequence_parallel.clear();
    for (const std::string& v : split_list(sequence_parallel)) {
      if (v != "on" && v != "off") throw std::invalid_argument("--sequence-parallel " + v + ": use on or off");
      o.sequence_parallel.push_back(v == "on");
    }
    if (o.reduce.empty()) throw std::invalid_argument("--reduce-dtype '" + reduce + "': name at least one dtype");
    if (o.stages.empty()) throw std::invalid_argument("--stages '" + stages + "': name at least one stage");
    if (o.tp.empty()) throw std::invalid_argument("--tp '" + tp + "': name at least one size");
    if (o.sequence_parallel.empty())
      throw std::invalid_argument("--sequence-parallel '" + sequence_parallel + "': name on, off or both");
    if (o.steps < 1) throw std::invalid_argument("--steps " + std::to_string(o.steps) + ": must be >= 1");
    if (o.micro < 1) throw std::invalid_argument("--micro-batch " + std::to_string(o.micro) + ": must be >= 1");
    if (o.threads < 1) throw std::invalid_argument("--threads " + std::to_string(o.threads) + ": must be >= 1");
  });
  return true;
}

// One (reduce dtype, stage, tp, sequence parallelism) configuration: its own device, counted
// communicators, model, engine and trainer, and the times of its timed steps split at the phases
// the engine reports.
struct Config {
  DType reduce = DType::kF32;
  int stage = 0;
  int tp = 1;
  bool sequence_parallel = false;
  std::unique_ptr<Device> device;
  std::unique_ptr<CountingCommunicator> data;    // the engine's (data-parallel) group
  std::unique_ptr<CountingCommunicator> tensor;  // the tensor-parallel group; null at tp 1
  std::unique_ptr<Gpt> model;
  std::unique_ptr<ShardedEngine> engine;
  std::unique_ptr<Trainer> trainer;
  Clock::time_point loss_at, last_backward_at, step_at;
  std::vector<double> total, forward, backward, step;  // seconds per timed step
  std::int64_t data_sent = 0, tensor_sent = 0;         // bytes over the timed steps

  std::int64_t tensor_bytes_sent() const { return tensor ? tensor->bytes_sent() : 0; }
};

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The slowest rank sets the pace: the max over ranks of each rank's median, in ms.
double slowest_median_ms(Communicator& world, const std::vector<double>& times) {
  float ms = static_cast<float>(median(times) * 1e3);
  world.all_reduce(Span(&ms, 1), DType::kF32, ReduceOp::kMax).wait();
  return ms;
}

// The largest of every rank's `value`, exact (the 8 bytes of each rank's value gathered).
std::int64_t max_over_ranks(Communicator& world, std::int64_t value) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(world.size()));
  world.all_gather(ConstSpan(&value, sizeof value), Span(all.data(), all.size() * sizeof value), DType::kU8).wait();
  return *std::max_element(all.begin(), all.end());
}

const GptConfig kSmall{8192, 256, 6, 6, 384};

void build(Config& c, Communicator& world, TensorParallelMesh* mesh, const Options& o) {
  c.device = make_device(DeviceChoice::kCpu);
  ShardingConfig sharding;
  sharding.stage = parse_zero_stage(c.stage);
  sharding.precision.reduce_dtype = c.reduce;
  sharding.prefetch_units = o.prefetch;
  if (!mesh) {
    c.data = std::make_unique<CountingCommunicator>(world);
    c.model = std::make_unique<Gpt>(kSmall);
    c.engine = std::make_unique<ShardedEngine>(*c.model, *c.device, *c.data, sharding, 1);
    c.trainer = std::make_unique<Trainer>(*c.engine);
    return;
  }
  c.data = std::make_unique<CountingCommunicator>(*mesh->data);
  c.tensor = std::make_unique<CountingCommunicator>(*mesh->tensor);
  auto tp = std::make_shared<TensorParallel>(std::make_shared<CommTensorParallelGroup>(*c.tensor), c.sequence_parallel);
  c.model = std::make_unique<Gpt>(kSmall, tp);
  c.engine = std::make_unique<ShardedEngine>(*c.model, *c.device, *c.data, sharding, 1, c.tensor.get());
  c.trainer = std::make_unique<Trainer>(*c.engine, std::make_shared<TokenCrossEntropy>(tp, kSmall.vocab_size));
}

std::int64_t model_state_bytes(const MemoryTracker& m) {
  return m.current(MemoryCategory::kParameters) + m.current(MemoryCategory::kGradients) +
         m.current(MemoryCategory::kOptimizerState);
}

void print_zero_table(Communicator& world, const std::vector<Config>& configs, const std::vector<double>& step_ms,
                      const Options& o) {
  const bool root = world.rank() == 0;
  const int n = world.size();
  std::size_t first = configs.size();  // the first configuration without tensor parallelism
  for (std::size_t k = 0; k < configs.size() && first == configs.size(); ++k) {
    if (configs[k].tp == 1) first = k;
  }
  if (first == configs.size()) return;
  if (root) {
    const std::string versus = std::string("vs 0/") + dtype_name(configs[first].reduce);
    std::printf("%-6s %-5s %9s %8s %8s %8s %10s %14s %14s %9s %12s %10s\n", "reduce", "stage", "ms/step", "fwd", "bwd",
                "step", "tokens/s", "state/rank", "formula", "vs formula", "peak total", versus.c_str());
  }
  // The reference: ZeRO-0 with the first reduce dtype, when it was run.
  double reference_ms = 0.0;
  for (std::size_t k = 0; k < configs.size() && reference_ms == 0.0; ++k) {
    const Config& c = configs[k];
    if (c.tp == 1 && c.stage == 0 && c.reduce == configs[first].reduce) reference_ms = step_ms[k];
  }
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const Config& c = configs[k];
    if (c.tp != 1) continue;
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
    const std::int64_t measured = model_state_bytes(m);
    if (root) {
      const double tokens = static_cast<double>(o.micro * kSmall.max_seq_len * n);
      char versus[32] = "-";
      if (reference_ms > 0) std::snprintf(versus, sizeof versus, "%.2fx", ms / reference_ms);
      std::printf("%-6s %-5d %9.1f %8.1f %8.1f %8.1f %10.0f %14s %14s %8.2f%% %12s %10s\n", dtype_name(c.reduce), st,
                  ms, fwd, bwd, stp, tokens / (ms * 1e-3), format_bytes(measured).c_str(),
                  format_bytes(formula).c_str(),
                  100.0 * static_cast<double>(measured - formula) / static_cast<double>(formula),
                  format_bytes(m.peak_total()).c_str(), versus);
    }
  }
  if (root) {
    std::printf(
        "\nfwd: start of the step to the loss; bwd: to the last module's backward; step: the rest (the "
        "last gradient reductions, the norm, the optimizer, publishing); each the max over ranks of the "
        "rank's median\n");
    std::printf(
        "formula: params 4P (stages 0-2) or 4P/N (3); grads 4P (0-1) or 4P/N (2-3); Adam m,v 8P (0) or "
        "8P/N (1-3); P = parameters padded per unit to a multiple of N\n");
  }
}

// Each configuration against the one without tensor parallelism at its reduce dtype and stage.
void print_tensor_parallel_table(Communicator& world, const std::vector<Config>& configs,
                                 const std::vector<double>& step_ms, const Options& o) {
  const bool root = world.rank() == 0;
  const int n = world.size();
  if (root) {
    std::printf("\ntensor parallelism: tp ranks per group x dp = %d/tp data-parallel ranks, micro %lld per dp rank\n\n",
                n, static_cast<long long>(o.micro));
    std::printf("%-6s %-5s %-11s %-3s %8s %7s %7s %9s %11s %11s %11s %11s %11s %7s %7s\n", "reduce", "stage", "layout",
                "sp", "ms/step", "fwd", "bwd", "tokens/s", "dp sent", "tp sent", "state/rank", "activations",
                "peak total", "ms vs", "act vs");
  }
  std::vector<std::int64_t> activations;
  for (const Config& c : configs)
    activations.push_back(max_over_ranks(world, c.device->memory().peak(MemoryCategory::kActivations)));
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const Config& c = configs[k];
    const double fwd = slowest_median_ms(world, c.forward), bwd = slowest_median_ms(world, c.backward);
    const std::int64_t data_sent = max_over_ranks(world, c.data_sent / o.steps);
    const std::int64_t tensor_sent = max_over_ranks(world, c.tensor_sent / o.steps);
    const std::int64_t state = max_over_ranks(world, model_state_bytes(c.device->memory()));
    const std::int64_t peak = max_over_ranks(world, c.device->memory().peak_total());
    if (!root) continue;
    std::size_t base = configs.size();  // the same reduce dtype and stage at tp 1
    for (std::size_t b = 0; b < configs.size() && base == configs.size(); ++b) {
      if (configs[b].tp == 1 && configs[b].stage == c.stage && configs[b].reduce == c.reduce) base = b;
    }
    char versus_ms[16] = "-", versus_act[16] = "-";
    if (base < configs.size()) {
      std::snprintf(versus_ms, sizeof versus_ms, "%.2fx", step_ms[k] / step_ms[base]);
      std::snprintf(versus_act, sizeof versus_act, "%.2fx",
                    static_cast<double>(activations[k]) / static_cast<double>(activations[base]));
    }
    const std::string layout =
        c.tp == 1 ? "dp " + std::to_string(n) : "tp " + std::to_string(c.tp) + " x dp " + std::to_string(n / c.tp);
    const double tokens = static_cast<double>(o.micro * kSmall.max_seq_len * (n / c.tp));
    std::printf("%-6s %-5d %-11s %-3s %8.1f %7.1f %7.1f %9.0f %11s %11s %11s %11s %11s %7s %7s\n", dtype_name(c.reduce),
                c.stage, layout.c_str(), c.tp == 1 ? "-" : (c.sequence_parallel ? "on" : "off"), step_ms[k], fwd, bwd,
                tokens / (step_ms[k] * 1e-3), format_bytes(data_sent).c_str(), format_bytes(tensor_sent).c_str(),
                format_bytes(state).c_str(), format_bytes(activations[k]).c_str(), format_bytes(peak).c_str(),
                versus_ms, versus_act);
  }
  if (root) {
    std::printf(
        "\nsp: sequence parallelism; dp/tp sent: bytes one rank sends per step in the data-/tensor-parallel "
        "group's collectives (the MPI backend's direct algorithms, as a ring's), the max over ranks; "
        "state/rank: parameters, gradients and optimizer state now; activations: the peak of kept activations "
        "and their gradients; peak total: the highest simultaneous total; ms vs, act vs: against dp %d at the "
        "same reduce dtype and stage\n",
        n);
  }
}

int bench(DistributedContext& ctx, const Options& o) {
  set_cpu_threads(o.threads);
  Communicator& world = ctx.world();
  const int n = world.size();
  std::map<int, TensorParallelMesh> meshes;  // per tensor-parallel size above 1, shared by its configurations
  for (int tp : o.tp) {
    if (n % tp != 0) {
      throw std::invalid_argument("--tp " + std::to_string(tp) + ": must divide the job's " + std::to_string(n) +
                                  " ranks; run with a multiple of " + std::to_string(tp) + " ranks or drop it");
    }
    if (tp > 1) meshes.emplace(tp, make_tensor_parallel_mesh(world, tp, {}));
  }
  std::vector<Config> configs;
  for (DType reduce : o.reduce) {
    for (int stage : o.stages) {
      for (int tp : o.tp) {
        for (std::size_t v = 0; v < (tp == 1 ? 1 : o.sequence_parallel.size()); ++v) {
          Config& c = configs.emplace_back();
          c.reduce = reduce;
          c.stage = stage;
          c.tp = tp;
          c.sequence_parallel = tp > 1 && o.sequence_parallel[v];
          build(c, world, tp == 1 ? nullptr : &meshes.at(tp), o);
        }
      }
    }
  }
  std::vector<MicroBatch> batches;  // per configuration (each on its own device)
  for (Config& c : configs) {
    // The ranks of a tensor-parallel group read the same sequences: seeded by the data-parallel rank.
    const auto seed = 100 + static_cast<std::uint64_t>(c.data->rank());
    batches.push_back(random_batch(*c.device, kSmall, o.micro, seed));
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
      const std::int64_t data_before = c.data->bytes_sent(), tensor_before = c.tensor_bytes_sent();
      const auto t0 = Clock::now();
      c.trainer->train_step({batches[k]}, 1e-4f);
      const auto t1 = Clock::now();
      c.data_sent += c.data->bytes_sent() - data_before;
      c.tensor_sent += c.tensor_bytes_sent() - tensor_before;
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
        kSmall.to_string().c_str(), n, o.threads, static_cast<long long>(o.micro), reduce_list.c_str(), o.prefetch,
        o.steps);
  }
  std::vector<double> step_ms;
  for (Config& c : configs) step_ms.push_back(slowest_median_ms(world, c.total));
  print_zero_table(world, configs, step_ms, o);
  if (std::any_of(o.tp.begin(), o.tp.end(), [](int tp) { return tp > 1; }))
    print_tensor_parallel_table(world, configs, step_ms, o);
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
