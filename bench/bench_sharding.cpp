// bench_sharding: ZeRO stages 0-3 on the small GPT across the ranks of an mpirun job. Prints per
// stage: ms/step, tokens/s (all ranks), the per-rank model-state bytes measured by the tracker
// next to the ZeRO formula (docs/ARCHITECTURE.md), and the stage-3 / stage-0 step-time ratio.
// Usage: mpirun -np 2 bench_sharding [--threads 1] [--steps 5] [--micro-batch 4]
//        [--reduce-dtype f32|bf16] [--prefetch 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "launch/run_distributed.hpp"
#include "runtime/cpu/blas_core.hpp"
#include "runtime/device_factory.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/random.hpp"
#include "sharding/sharded_engine.hpp"
#include "training/trainer.hpp"

namespace tessera {
namespace {

using benchmarks::median;
using benchmarks::random_batch;

struct Args {
  int threads = 1, steps = 5, prefetch = 1;
  std::int64_t micro = 4;
  DType reduce = DType::kF32;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") a.threads = std::stoi(v);
    else if (k == "--steps") a.steps = std::stoi(v);
    else if (k == "--micro-batch") a.micro = std::stoll(v);
    else if (k == "--prefetch") a.prefetch = std::stoi(v);
    else if (k == "--reduce-dtype") a.reduce = parse_dtype(v, "--reduce-dtype");
    else throw std::invalid_argument("bench_sharding: unknown option " + k);
  }
  return a;
}

int bench(DistributedContext& ctx) {
  const Args args = parse(ctx.argc(), ctx.argv());
  set_cpu_threads(args.threads);
  const GptConfig small{8192, 256, 6, 6, 384};
  Communicator& world = ctx.world();
  const int n = world.size();
  if (ctx.rank() == 0) {
    std::printf("bench_sharding: GPT %s, %d ranks x %d threads, micro %lld per rank, reduce %s, prefetch %d, "
                "%d timed steps (median) after 1 warm-up\n\n",
                small.to_string().c_str(), n, args.threads, static_cast<long long>(args.micro),
                dtype_name(args.reduce), args.prefetch, args.steps);
    std::printf("%-6s %9s %10s %14s %14s %9s %12s %12s\n", "stage", "ms/step", "tokens/s", "state/rank",
                "formula", "vs formula", "peak total", "vs stage 0");
  }
  double stage0_ms = 0.0;
  for (int st = 0; st <= 3; ++st) {
    auto device = make_device(DeviceChoice::kCpu);
    Gpt model(small);
    ShardingConfig config;
    config.stage = parse_zero_stage(st);
    config.precision.reduce_dtype = args.reduce;
    config.prefetch_units = args.prefetch;
    ShardedEngine engine(model, *device, world, config, 1);
    Trainer trainer(engine);
    const MicroBatch batch = random_batch(*device, small, args.micro, 100 + ctx.rank());
    trainer.train_step({batch}, 1e-4f);  // warm-up
    std::vector<double> times;
    for (int s = 0; s < args.steps; ++s) {
      world.barrier().wait();
      const auto t0 = std::chrono::steady_clock::now();
      trainer.train_step({batch}, 1e-4f);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    // The slowest rank sets the pace: take the max over ranks of each rank's median.
    std::sort(times.begin(), times.end());
    float ms = static_cast<float>(times[times.size() / 2] * 1e3);
    world.all_reduce(Span(&ms, 1), DType::kF32, ReduceOp::kMax).wait();
    if (st == 0) stage0_ms = ms;

    std::int64_t padded = 0, shard = 0;
    for (const auto& u : engine.units()) {
      padded += u->layout().padded_numel();
      shard += u->layout().shard_numel();
    }
    const std::int64_t formula = (st < 3 ? 4 * padded : 4 * shard) + (st < 2 ? 4 * padded : 4 * shard) +
                                 (st == 0 ? 8 * padded : 8 * shard);
    const MemoryTracker& m = device->memory();
    const std::int64_t measured = m.current(MemoryCategory::kParameters) + m.current(MemoryCategory::kGradients) +
                                  m.current(MemoryCategory::kOptimizerState);
    if (ctx.rank() == 0) {
      const double tokens = static_cast<double>(args.micro * small.max_seq_len * n);
      std::printf("%-6d %9.1f %10.0f %14s %14s %8.2f%% %12s %11.2fx\n", st, ms, tokens / (ms * 1e-3),
                  format_bytes(measured).c_str(), format_bytes(formula).c_str(),
                  100.0 * static_cast<double>(measured - formula) / static_cast<double>(formula),
                  format_bytes(m.peak_total()).c_str(), ms / stage0_ms);
    }
  }
  if (ctx.rank() == 0) {
    std::printf("\nformula: params 4P (stages 0-2) or 4P/N (3); grads 4P (0-1) or 4P/N (2-3); Adam m,v 8P (0) or "
                "8P/N (1-3); P = parameters padded per unit to a multiple of N\n");
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, tessera::bench);
}
