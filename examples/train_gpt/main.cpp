// train_gpt: trains a GPT-2-style model on a token file on the CPU, logging loss, learning rate,
// gradient norm, tokens/s, MFU (against the GEMM ceiling measured at start) and peak memory, and
// printing a text sample at the end.
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/data/byte_tokenizer.hpp"
#include "runtime/data/sample_loader.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/device.hpp"
#include "runtime/gemm_ceiling.hpp"
#include "runtime/local_trainer.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/modules/gpt_flops.hpp"
#include "runtime/modules/gpt_sampling.hpp"
#include "runtime/optim/lr_schedule.hpp"
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
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(count * t)), targets(inputs.size());
  loader.batch(first, count, inputs.data(), targets.data());
  return {Tensor::from_host_i32(device, inputs, {count, t}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, targets, {count, t}, MemoryCategory::kWorkspace)};
}

float validation_loss(LocalTrainer& trainer, Device& device, const SampleLoader& loader, const TrainOptions& o) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < o.eval_batches; ++i) {
    sum += trainer.evaluate(load_batch(device, loader, i * o.micro_batch, o.micro_batch));
  }
  return static_cast<float>(sum / static_cast<double>(o.eval_batches));
}

int run(const TrainOptions& o) {
  set_cpu_threads(o.threads);
  auto device = make_cpu_device();

  const TokenDataset train_data(o.data);
  std::optional<TokenDataset> val_data;
  const std::string val_path = o.val_data.empty() ? default_val_path(o.data.front()) : o.val_data;
  if (!o.val_data.empty() || std::filesystem::exists(val_path)) val_data.emplace(std::vector<std::string>{val_path});

  const ByteTokenizer tokenizer;
  GptConfig config;
  config.vocab_size = o.vocab > 0 ? o.vocab : padded_vocab(tokenizer.vocab_size());
  config.max_seq_len = o.seq_len;
  config.layers = o.layers;
  config.heads = o.heads;
  config.channels = o.dim;
  Gpt model(config);
  materialize_parameters(model, *device, o.seed);

  const SampleLoader train_loader(train_data, o.seq_len, o.seed);
  std::optional<SampleLoader> val_loader;
  if (val_data) val_loader.emplace(*val_data, o.seq_len, o.seed + 1);

  AdamWConfig adamw;
  adamw.beta1 = static_cast<float>(o.beta1);
  adamw.beta2 = static_cast<float>(o.beta2);
  adamw.weight_decay = static_cast<float>(o.weight_decay);
  LocalTrainer trainer(model, *device, adamw, static_cast<float>(o.grad_clip));
  const LrSchedule schedule{static_cast<float>(o.lr), o.warmup, o.steps, static_cast<float>(o.min_lr_ratio)};

  const GemmCeiling ceiling = measure_gemm_ceiling(*device, 1024, 1024, 1024, 0.2);
  const double flops_per_token = gpt_training_flops_per_token(config, o.seq_len);
  const std::int64_t tokens_per_step = o.micro_batch * o.seq_len;

  std::printf("train_gpt: GPT %s, %lld parameters, %s\n", config.to_string().c_str(),
              static_cast<long long>(model.parameter_count()), device->name().c_str());
  std::printf("data: %s (%lld tokens, %lld windows of %lld)%s\n", train_data.describe().c_str(),
              static_cast<long long>(train_data.num_tokens()), static_cast<long long>(train_loader.windows_per_epoch()),
              static_cast<long long>(o.seq_len), val_data ? (", validation: " + val_path).c_str() : "");
  std::printf("batch: micro %lld x ranks 1 x accumulation 1 = global %lld sequences = %lld tokens per step\n",
              static_cast<long long>(o.micro_batch), static_cast<long long>(o.micro_batch),
              static_cast<long long>(tokens_per_step));
  std::printf("GEMM ceiling: %.1f GFLOP/s (f32 %lldx%lldx%lld); MFU below is training FLOP/s over it\n",
              ceiling.gflops, 1024LL, 1024LL, 1024LL);
  if (val_loader) std::printf("step %5d | val loss %.4f\n", 0, validation_loss(trainer, *device, *val_loader, o));

  double window_seconds = 0.0;
  std::int64_t window_steps = 0;
  for (std::int64_t step = 0; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<MicroBatch> batches{load_batch(*device, train_loader, step * o.micro_batch, o.micro_batch)};
    const float lr = schedule.lr_at(step);
    const StepResult r = trainer.step(batches, lr);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    window_seconds += dt;
    ++window_steps;
    if ((step + 1) % o.log_every == 0 || step == 0 || step + 1 == o.steps) {
      const double tokens_per_s = static_cast<double>(tokens_per_step * window_steps) / window_seconds;
      const double mfu = 100.0 * tokens_per_s * flops_per_token / (ceiling.gflops * 1e9);
      std::printf("step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.3f%s | %6.0f tok/s | MFU %4.1f%% | peak %s\n",
                  static_cast<long long>(step + 1), static_cast<long long>(o.steps), r.loss, lr, r.grad_norm,
                  r.skipped ? " (skipped)" : "", tokens_per_s, mfu,
                  format_bytes(device->memory().peak_total()).c_str());
      std::fflush(stdout);
      window_seconds = 0.0;
      window_steps = 0;
    }
    if (val_loader && o.eval_every > 0 && ((step + 1) % o.eval_every == 0 || step + 1 == o.steps)) {
      std::printf("step %5lld | val loss %.4f\n", static_cast<long long>(step + 1),
                  validation_loss(trainer, *device, *val_loader, o));
    }
  }
  if (o.memory_report) std::printf("\nmemory (this process):\n%s", memory_summary(device->memory()).c_str());

  if (o.sample_tokens > 0) {
    Rng rng(o.seed);
    SamplingOptions sampling;
    sampling.new_tokens = o.sample_tokens;
    sampling.temperature = static_cast<float>(o.temperature);
    sampling.vocab_limit = tokenizer.vocab_size();
    const auto tokens = sample_tokens(model, *device, tokenizer.encode("The "), sampling, rng);
    std::printf("\nsample:\n---\nThe %s\n---\n", tokenizer.decode(tokens).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  try {
    const auto options = tessera::parse_train_options(argc, argv);
    if (!options) return 0;
    return tessera::run(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gpt: error: %s\n", e.what());
    return 1;
  }
}
