// bench_memory: the memory planner's prediction next to what the engine's tracker measures, per
// category, for ZeRO stages 0-3 (one configuration otherwise), on the ranks of an mpirun job.
// The measured step is the second one (after a warm-up), peaks reset just before it.
// Usage: mpirun -np 2 bench_memory [--model small] [--micro-batch 1] [--seq-len 0]
//        [--checkpointing none,blocks] [--param-dtype f32] [--reduce-dtype f32] [--threads 1] [--device auto]
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "flags/device_flag.hpp"
#include "flags/program_options.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/planning/measured_step.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/device_factory.hpp"

namespace tessera {
namespace {

struct Args {
  std::string model = "small";
  std::int64_t micro = 1, seq_len = 0;
  std::vector<std::string> policies{"none", "blocks"};
  DType param = DType::kF32, reduce = DType::kF32;
  int threads = 1;
  DeviceFlags device;  // --device, --gemm-math
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// nullopt: --help was printed.
std::optional<Args> parse(int argc, char** argv, bool print_help) {
  Args a;
  std::string policies = "none,blocks", param = "f32", reduce = "f32";
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("model", value_with_default(&a.model), "model preset (tessera_plan --help lists them)")
      ("micro-batch", value_with_default(&a.micro), "sequences per rank per step")
      ("seq-len", value_with_default(&a.seq_len), "sequence length (0: the preset's)")
      ("checkpointing", value_with_default(&policies), "comma-separated activation-checkpointing policies")
      ("param-dtype", value_with_default(&param), "stored parameters: f32, bf16, f16")
      ("reduce-dtype", value_with_default(&reduce), "gradient collectives: f32, bf16, f16")
      ("threads", value_with_default(&a.threads), "CPU threads per rank");
  // clang-format on
  add_device_option(options, &a.device);
  ProgramOptions program("bench_memory",
                         "bench_memory: the planner's per-category prediction next to the engine's "
                         "measurement, ZeRO stages 0-3\nUsage: mpirun -np 2 bench_memory [options]");
  program.add(options);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  a.policies = split(policies);
  a.param = parse_dtype(param, "--param-dtype");
  a.reduce = parse_dtype(reduce, "--reduce-dtype");
  return a;
}

int bench(DistributedContext& ctx) {
  const std::optional<Args> parsed = parse(ctx.argc(), ctx.argv(), ctx.rank() == 0);
  if (!parsed) return 0;
  const Args& args = *parsed;
  set_cpu_threads(args.threads);
  Communicator& world = ctx.world();
  const std::unique_ptr<Device> device = open_device_on_every_rank(args.device, ctx, "bench_memory");
  if (!device) return 2;
  if (ctx.rank() == 0) std::printf("%s\n", device_line(args.device, *device).c_str());
  MeasureOptions measure;
  measure.device = parse_device_choice(args.device.device);
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
      c.recompute = parse_recompute_policy(policy);
      const MemoryPlan plan = plan_memory(c);
      const MeasuredStep measured = measure_engine_step(c, world, measure);
      rows.push_back({"ZeRO-" + std::to_string(st), plan, measured});
      worst = std::max(worst, largest_difference(plan, measured));
    }
    if (ctx.rank() == 0) {
      std::printf("bench_memory: %s, %d ranks, micro %lld, checkpointing %s, param %s, reduce %s (rank 0)\n\n",
                  rows.front().plan.config.model.describe().c_str(), world.size(), static_cast<long long>(args.micro),
                  policy.c_str(), dtype_name(args.param), dtype_name(args.reduce));
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
