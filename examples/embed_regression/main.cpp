// embed_regression: a program of its own, built against an installed Tessera, that trains a model the
// library does not ship with a loss other than the token cross-entropy — a regression network
// (features (B,8) f32 -> LayerNorm -> Linear + GELU -> Linear + GELU -> Linear -> (B,1)) built from
// the library's modules with Sequential, no backward written by hand, learning y = sin(x0) + x1 x2 -
// x3 / 2 with MeanSquaredError — through the library's training loop (TrainingRun): global batch 16
// in micro-batches of 2 (the accumulation follows the rank count), checkpoints every 5 steps, resumed
// from RUN_DIR's latest one when started again (on any rank count), a metrics file.
//
// Before training it plans the run's memory (the same model and loss on the meta device) and checks
// it against the engine's measured step on the CPU, category by category, to the byte.
//   mpirun -np 2 embed_regression RUN_DIR STEPS ZERO_STAGE
// Rank 0 prints "plan <category> <planned> <measured>" per category, "plan equals the measured step"
// (or "plan differs"), "resumed at step S" when resuming, and "step S loss L" per step.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <tessera/tessera.hpp>
#include <vector>

namespace {

using namespace tessera;

constexpr std::int64_t kFeatures = 8, kHidden = 32, kGlobalBatch = 16, kMicroBatch = 2;

std::unique_ptr<Module> build_model() {
  return std::make_unique<Sequential>(std::make_unique<LayerNorm>(kFeatures),
                                      std::make_unique<Linear>(kFeatures, kHidden, true, 0.3f), std::make_unique<Gelu>(),
                                      std::make_unique<Linear>(kHidden, kHidden, true, 0.2f), std::make_unique<Gelu>(),
                                      std::make_unique<Linear>(kHidden, 1, true, 0.2f));
}

// Global sample i: features drawn from a generator seeded with i, and its target — a function of the
// sample index only, so the loop's data position decides what every rank reads at every step.
void sample(std::int64_t i, float* x, float* y) {
  std::mt19937 gen(static_cast<std::uint32_t>(i) + 1u);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::int64_t f = 0; f < kFeatures; ++f) x[f] = uniform(gen);
  *y = std::sin(x[0]) + x[1] * x[2] - 0.5f * x[3];
}

// Samples [first, first + count): inputs (count, 8) f32, targets (count, 1) f32, on the device.
MicroBatch samples(Device& device, std::int64_t first, std::int64_t count) {
  std::vector<float> x(static_cast<std::size_t>(count * kFeatures)), y(static_cast<std::size_t>(count));
  for (std::int64_t r = 0; r < count; ++r) sample(first + r, &x[r * kFeatures], &y[r]);
  return {Tensor::from_host(device, x, {count, kFeatures}, DType::kF32, MemoryCategory::kWorkspace),
          Tensor::from_host(device, y, {count, 1}, DType::kF32, MemoryCategory::kWorkspace)};
}

// The run's memory, planned (meta device) and measured (the engine's step on the CPU): rank 0 prints
// both per category. Collective.
void check_plan(DistributedContext& dist, const ShardingConfig& sharding, const BatchPlan& batch) {
  CustomModel custom;
  custom.build = build_model;
  custom.batch = {{"inputs", {kFeatures}, DType::kF32}, {"targets", {1}, DType::kF32}};
  custom.loss = std::make_shared<MeanSquaredError>();
  PlanConfig config = PlanConfig::for_run(model_from_module("regression", custom), sharding, batch);
  config.host_is_device = true;  // the CPU device
  const MemoryPlan plan = plan_memory(config);
  const MeasuredStep measured = measure_engine_step(config, dist.world(), {.device = DeviceChoice::kCpu});
  bool equal = true;
  for (MemoryCategory c : kAllMemoryCategories) {
    const std::int64_t planned = plan.peak(c), got = measured.step.peak_of(c);
    equal = equal && planned == got;
    if (dist.rank() == 0) {
      std::printf("plan %s %lld %lld\n", memory_category_name(c), static_cast<long long>(planned),
                  static_cast<long long>(got));
    }
  }
  equal = equal && plan.step.peak_total == measured.step.peak_total;
  if (dist.rank() == 0) std::printf("%s\n", equal ? "plan equals the measured step" : "plan differs");
}

int train(DistributedContext& dist) {
  if (dist.argc() != 4) {
    if (dist.rank() == 0) std::fprintf(stderr, "usage: embed_regression RUN_DIR STEPS ZERO_STAGE\n");
    return 2;
  }
  const std::string run_dir = dist.argv()[1];
  const std::int64_t steps = parse_integer(dist.argv()[2], "STEPS", 0);
  const std::int64_t stage = parse_integer(dist.argv()[3], "ZERO_STAGE", 0);
  std::unique_ptr<Device> device = make_device(parse_device_choice("cpu"));
  ShardingConfig sharding;
  sharding.stage = parse_zero_stage(static_cast<int>(stage));
  BatchRequest request;
  request.global = kGlobalBatch;
  request.micro = kMicroBatch;
  request.data_parallel_ranks = dist.world_size();
  request.seq_len = 1;  // one value per sample
  const BatchPlan batch = plan_batch(request);
  check_plan(dist, sharding, batch);

  std::unique_ptr<Module> model = build_model();
  ShardedEngine engine(*model, *device, dist.world(), sharding, /*seed=*/11);
  TrainingRunOptions run;
  run.steps = steps;
  run.batch = batch;
  run.loss = std::make_shared<MeanSquaredError>();
  run.schedule = LrSchedule{2e-2f, /*warmup*/ 2, /*total*/ 40, /*min_lr_ratio*/ 0.1f};
  run.checkpoint.dir = run_dir;
  run.checkpoint.save_every = 5;
  run.checkpoint.resume = "auto";
  run.run_config.set_model("model", "regression MLP");
  run.run_config.set_model("hidden", kHidden);
  run.metrics_path = run_dir + "/metrics.jsonl";
  run.log_every = 1;
  run.progress = ProgressStyle::kQuiet;  // this program prints its own line per step
  run.on_step = [&](std::int64_t step, const StepResult& r) {
    if (dist.rank() == 0) std::printf("step %lld loss %.9g\n", static_cast<long long>(step - 1), r.loss);
  };
  TrainingRun training(engine, dist.world(), run,
                       [&](std::int64_t first, std::int64_t count) { return samples(*device, first, count); });
  if (training.resumed_from() && dist.rank() == 0) {
    std::printf("resumed at step %lld\n", static_cast<long long>(training.progress().step));
  }
  std::fflush(stdout);
  return training.run() == RunEnd::kDiverged ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return tessera::run_distributed(argc, argv, train); }
