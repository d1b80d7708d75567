// bench_memory: the memory planner's prediction next to what the engine's tracker measures, per
// category, for ZeRO stages 0-3 (one configuration otherwise), on the ranks of an mpirun job.
// The measured step is the second one (after a warm-up), peaks reset just before it.
// Usage: mpirun -np 2 bench_memory [--model small] [--micro-batch 1] [--seq-len 0]
//        [--checkpointing none,blocks] [--param-dtype f32] [--reduce-dtype f32] [--threads 1]
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "launch/run_distributed.hpp"
#include "runtime/cpu/blas_core.hpp"
#include "planning/measured_step.hpp"
#include "planning/memory_plan.hpp"
#include "planning/plan_report.hpp"
#include "runtime/device.hpp"

namespace tessera {
namespace {

struct Args {
  std::string model = "small";
  std::int64_t micro = 1, seq_len = 0;
  std::vector<std::string> policies{"none", "blocks"};
  DType param = DType::kF32, reduce = DType::kF32;
  int threads = 1;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") a.model = v;
    else if (k == "--micro-batch") a.micro = std::stoll(v);
    else if (k == "--seq-len") a.seq_len = std::stoll(v);
    else if (k == "--checkpointing") a.policies = split(v);
    else if (k == "--param-dtype") a.param = parse_dtype(v, "--param-dtype");
    else if (k == "--reduce-dtype") a.reduce = parse_dtype(v, "--reduce-dtype");
    else if (k == "--threads") a.threads = std::stoi(v);
    else throw std::invalid_argument("bench_memory: unknown option " + k);
  }
  return a;
}

int bench(DistributedContext& ctx) {
  const Args args = parse(ctx.argc(), ctx.argv());
  set_cpu_threads(args.threads);
  Communicator& world = ctx.world();
  std::int64_t worst = 0;
  for (const std::string& policy : args.policies) {
    std::vector<PlanComparison> rows;
    for (int st = 0; st <= 3; ++st) {
      PlanConfig c;
      c.model = model_preset(args.model);
      c.seq_len = args.seq_len;
      c.stage = parse_zero_stage(st);
      c.ranks = world.size();
      c.micro_batch = args.micro;
      c.precision.param_dtype = args.param;
      c.precision.reduce_dtype = args.reduce;
      c.checkpointing = parse_checkpoint_policy(policy);
      const MemoryPlan plan = plan_memory(c);
      const MeasuredStep measured = measure_engine_step(c, world);
      rows.push_back({"ZeRO-" + std::to_string(st), plan, measured});
      worst = std::max(worst, largest_difference(plan, measured));
    }
    if (ctx.rank() == 0) {
      std::printf("bench_memory: %s, %d ranks, micro %lld, checkpointing %s, param %s, reduce %s (rank 0)\n\n",
                  rows.front().plan.config.model.describe().c_str(), world.size(),
                  static_cast<long long>(args.micro), policy.c_str(), dtype_name(args.param),
                  dtype_name(args.reduce));
      std::printf("%s\n", format_comparison_table(rows).c_str());
    }
  }
  // Every rank's worst difference, so a mismatch on any rank shows.
  double w = static_cast<double>(worst);
  float wf = static_cast<float>(w);
  world.all_reduce(Span(&wf, 1), DType::kF32, ReduceOp::kMax).wait();
  if (ctx.rank() == 0) std::printf("largest |planned - measured| over all ranks and categories: %.0f bytes\n", wf);
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, tessera::bench);
}
