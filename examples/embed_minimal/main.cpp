// embed_minimal: a program of its own, built against an installed Tessera, that trains its own
// model — a token tagger (embedding -> Linear -> ReLU -> Linear, logits (B,T,K)) learning the
// synthetic rule class = (3 * token + position) mod K — with ZeRO-2 over MPI through the library's
// training loop (TrainingRun): a checkpoint every 5 steps, resumed from the latest one when started
// again on the same directory, and a metrics file (RUN_DIR/metrics.jsonl) with its plots.
//   mpirun -np 2 embed_minimal RUN_DIR STEPS
// Rank 0 prints "resumed at step S" (when resuming) and "step S loss L" per step.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <tessera/tessera.hpp>
#include <vector>

namespace {

using namespace tessera;

constexpr std::int64_t kVocab = 16, kSeqLen = 8, kWidth = 32, kClasses = 16, kRowsPerRank = 8;

// tokens (B,T) i32 -> logits (B,T,K) f32. Parameters live in the children; the ReLU between the
// two Linear layers is this module's own forward and backward (on the CPU device).
class TokenTagger final : public Module {
 public:
  TokenTagger()
      : embed_(register_child("embed", std::make_unique<Embedding>(kVocab, kSeqLen, kWidth, 0.2f))),
        hidden_(register_child("hidden", std::make_unique<Linear>(kWidth, kWidth, true, 0.2f))),
        out_(register_child("out", std::make_unique<Linear>(kWidth, kClasses, true, 0.2f))) {}
  std::string type_name() const override { return "TokenTagger"; }

  Tensor forward(Context& ctx, const Tensor& tokens) override {
    Tensor h = hidden_->forward(ctx, embed_->forward(ctx, tokens));
    float* v = h.data_as<float>();
    for (std::int64_t i = 0; i < h.numel(); ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    if (ctx.training) active_ = h;
    return out_->forward(ctx, h);
  }
  Tensor backward(Context& ctx, Tensor dy) override {
    Tensor d = out_->backward(ctx, std::move(dy));
    float* g = d.data_as<float>();
    const float* a = active_.data_as<float>();
    for (std::int64_t i = 0; i < d.numel(); ++i) g[i] = a[i] > 0.0f ? g[i] : 0.0f;
    active_ = Tensor();
    return embed_->backward(ctx, hidden_->backward(ctx, d));
  }

 private:
  void clear_own_saved() override { active_ = Tensor(); }
  ModuleSlot& embed_;
  ModuleSlot& hidden_;
  ModuleSlot& out_;
  Tensor active_;  // (B,T,C) f32 after the ReLU, kept for backward
};

// Global sample `i` of the synthetic data: kSeqLen tokens drawn from a generator seeded with i, and
// their classes. A function of the sample index only, so the loop's data position (which samples
// each rank reads at each step, also after a resume) decides everything.
void sample(std::int64_t i, std::int32_t* tokens, std::int32_t* targets) {
  std::mt19937 gen(static_cast<std::uint32_t>(i));
  for (std::int64_t t = 0; t < kSeqLen; ++t) {
    tokens[t] = static_cast<std::int32_t>(gen() % kVocab);
    targets[t] = static_cast<std::int32_t>((3 * tokens[t] + t) % kClasses);
  }
}

// Samples [first, first + count) as a micro-batch (count, kSeqLen) i32 on the device.
MicroBatch samples(Device& device, std::int64_t first, std::int64_t count) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count * kSeqLen)), targets(tokens.size());
  for (std::int64_t r = 0; r < count; ++r) sample(first + r, &tokens[r * kSeqLen], &targets[r * kSeqLen]);
  const Shape shape{count, kSeqLen};
  return {Tensor::from_host_i32(device, tokens, shape, MemoryCategory::kActivations),
          Tensor::from_host_i32(device, targets, shape, MemoryCategory::kActivations)};
}

int train(DistributedContext& dist) {
  if (dist.argc() != 3) {
    if (dist.rank() == 0) std::fprintf(stderr, "usage: embed_minimal RUN_DIR STEPS\n");
    return 2;
  }
  const std::string run_dir = dist.argv()[1];
  const std::int64_t steps = parse_integer(dist.argv()[2], "STEPS", 0);
  std::unique_ptr<Device> device = make_device(parse_device_choice("cpu"));
  TokenTagger model;
  ShardingConfig sharding;
  sharding.stage = ZeroStage::kStage2;
  ShardedEngine engine(model, *device, dist.world(), sharding, /*seed=*/7);

  // The library's training loop: data position, checkpoints every 5 steps and on SIGTERM/SIGUSR1,
  // resume from the run directory's latest checkpoint, a metrics file with its plots.
  TrainingRunOptions run;
  run.steps = steps;
  BatchRequest batch;
  batch.micro = kRowsPerRank;
  batch.data_parallel_ranks = dist.world_size();
  batch.seq_len = kSeqLen;
  run.batch = plan_batch(batch);
  run.schedule = LrSchedule{1e-2f, /*warmup*/ 0, steps, /*min_lr_ratio*/ 1.0f};  // a constant 1e-2
  run.checkpoint.dir = run_dir;
  run.checkpoint.save_every = 5;
  run.checkpoint.resume = "auto";  // the directory's latest checkpoint when there is one
  run.run_config.set_model("model", "TokenTagger");
  run.run_config.set_model("width", kWidth);
  run.metrics_path = run_dir + "/metrics.jsonl";
  run.log_every = 1;                     // a metrics record every step
  run.progress = ProgressStyle::kQuiet;  // this program prints its own line per step
  run.on_step = [&](std::int64_t step, const StepResult& r) {
    if (dist.rank() == 0) std::printf("step %lld loss %.6f\n", static_cast<long long>(step - 1), r.loss);
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
