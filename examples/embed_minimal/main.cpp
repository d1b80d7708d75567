// embed_minimal: a program of its own, built against an installed Tessera, that trains its own
// model — a token tagger (embedding -> Linear -> ReLU -> Linear, logits (B,T,K)) learning the
// synthetic rule class = (3 * token + position) mod K — with ZeRO-2 over MPI, saving a checkpoint
// every 5 steps and resuming from the latest one when started again on the same directory.
//   mpirun -np 2 embed_minimal RUN_DIR STEPS
// Rank 0 prints "resumed at step S" (when resuming) and "step S loss L" per step.
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <tessera/tessera.hpp>

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

// This rank's rows of step `step`'s global batch: a function of (step, rank) only, so a resumed
// run sees the same data as one that never stopped.
MicroBatch batch_for(Device& device, std::int64_t step, int rank) {
  std::mt19937 gen(static_cast<std::uint32_t>(step * 1000 + rank));
  std::vector<std::int32_t> tokens(kRowsPerRank * kSeqLen), targets(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>(gen() % kVocab);
    targets[i] = static_cast<std::int32_t>((3 * tokens[i] + static_cast<std::int64_t>(i) % kSeqLen) % kClasses);
  }
  const Shape shape{kRowsPerRank, kSeqLen};
  return {Tensor::from_host_i32(device, tokens, shape, MemoryCategory::kActivations),
          Tensor::from_host_i32(device, targets, shape, MemoryCategory::kActivations)};
}

int train(DistributedContext& dist) {
  if (dist.argc() != 3) {
    if (dist.rank() == 0) std::fprintf(stderr, "usage: embed_minimal RUN_DIR STEPS\n");
    return 2;
  }
  const std::int64_t steps = std::stoll(dist.argv()[2]);
  std::unique_ptr<Device> device = make_device(parse_device_choice("cpu"));
  TokenTagger model;
  ShardingConfig sharding;
  sharding.stage = ZeroStage::kStage2;
  ShardedEngine engine(model, *device, dist.world(), sharding, /*seed=*/7);
  Trainer trainer(engine);

  CheckpointOptions options;
  options.dir = dist.argv()[1];
  options.save_every = 5;
  options.resume = "auto";  // the directory's latest checkpoint when there is one
  RunConfig run;
  run.set_model("model", "TokenTagger");
  run.set_model("width", kWidth);
  TrainingCheckpointer checkpointer(options, engine, dist.world(), run);
  TrainingProgress progress = checkpointer.resume();
  if (checkpointer.resumed_from() && dist.rank() == 0) std::printf("resumed at step %lld\n", static_cast<long long>(progress.step));

  for (std::int64_t step = progress.step; step < steps; ++step) {
    const StepResult result = trainer.train_step({batch_for(*device, step, dist.rank())}, 1e-2f);
    if (dist.rank() == 0) std::printf("step %lld loss %.6f\n", static_cast<long long>(step), result.loss);
    progress.step = step + 1;
    progress.samples_seen += kRowsPerRank * dist.world_size();
    progress.tokens_seen += kRowsPerRank * kSeqLen * dist.world_size();
    if (checkpointer.after_step(progress)) break;
  }
  checkpointer.finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tessera::run_distributed(argc, argv, train); }
