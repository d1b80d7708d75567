// bench_activation_ckpt: what each activation-checkpointing policy costs and saves on one GPT
// training step (forward, fused cross-entropy, backward, AdamW through LocalTrainer, as train_gpt
// runs it). Prints, per policy: the peak tracked activation bytes of the step, the median ms/step
// after a warm-up (and the fastest step, the steadier figure on a shared machine), and the ratios to
// `none`.
// The policies' steps are interleaved (one step of each in turn), so a background load slows all of
// them alike.
// Usage: bench_activation_ckpt [--threads N] [--steps N] [--batch B] [--layers L] [--device auto]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "flags/device_flag.hpp"
#include "flags/program_options.hpp"
#include "tessera/core/random.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/training/local_trainer.hpp"

namespace tessera {
namespace {

using benchmarks::median;
using benchmarks::random_batch;

struct PolicyRun {
  std::string label;
  std::unique_ptr<Device> device;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<LocalTrainer> trainer;
  std::vector<double> seconds;
  std::int64_t peak_activations = 0;
};

// One timed training step; the activations peak is taken over the step alone.
void timed_step(PolicyRun& run, const std::vector<MicroBatch>& batch) {
  run.device->memory().reset_peaks();
  const auto t0 = std::chrono::steady_clock::now();
  run.trainer->step(batch, 1e-4f);
  run.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  run.peak_activations = std::max(run.peak_activations, run.device->memory().peak(MemoryCategory::kActivations));
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  reexec_with_better_blas_core(argv);
  int threads = 2, steps = 5;
  std::int64_t batch_size = 8;
  DeviceFlags device_flag;  // --device, --gemm-math
  GptConfig config;         // the small config: L=6 C=384 NH=6 V=8192 T=256
  config.vocab_size = 8192;
  config.max_seq_len = 256;
  config.layers = 6;
  config.heads = 6;
  config.channels = 384;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("threads", value_with_default(&threads), "CPU threads")
      ("steps", value_with_default(&steps), "timed steps per policy (after one warm-up step)")
      ("batch", value_with_default(&batch_size), "sequences per step")
      ("layers", value_with_default(&config.layers), "transformer blocks of the small GPT");
  // clang-format on
  add_device_option(options, &device_flag);
  ProgramOptions program("bench_activation_ckpt",
                         "bench_activation_ckpt: peak activation bytes and ms/step of each activation-checkpointing "
                         "policy on one GPT training step");
  program.add(options);
  try {
    if (!program.parse(argc, argv)) return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bench_activation_ckpt: %s\n", e.what());
    return 2;
  }
  if (steps < 1 || batch_size < 1 || config.layers < 1) {
    std::fprintf(stderr, "bench_activation_ckpt: --steps, --batch and --layers must be >= 1\n");
    return 2;
  }
  set_cpu_threads(threads);

  std::vector<PolicyRun> runs;
  for (const char* label : {"none", "selective", "every:2", "blocks"}) {
    PolicyRun run;
    run.label = label;
    run.device = open_device_or_report(device_flag, "bench_activation_ckpt");
    if (!run.device) return 2;
    run.model = std::make_unique<Gpt>(config);
    apply_recompute(*run.model, parse_recompute_policy(label));
    materialize_parameters(*run.model, *run.device, 1);
    run.trainer = std::make_unique<LocalTrainer>(*run.model, *run.device, AdamWConfig{}, 1.0f);
    runs.push_back(std::move(run));
  }
  std::vector<std::vector<MicroBatch>> batches;
  for (PolicyRun& run : runs) batches.push_back({random_batch(*run.device, config, batch_size, 7)});

  for (std::size_t p = 0; p < runs.size(); ++p) runs[p].trainer->step(batches[p], 1e-4f);  // warm-up
  for (int s = 0; s < steps; ++s) {
    for (std::size_t p = 0; p < runs.size(); ++p) timed_step(runs[p], batches[p]);
  }

  std::printf("bench_activation_ckpt: GPT %s, B=%lld, %d threads, f32, %s\n%s\n", config.to_string().c_str(),
              static_cast<long long>(batch_size), threads, runs[0].device->name().c_str(),
              device_line(device_flag, *runs[0].device).c_str());
  std::printf(
      "step = forward + cross-entropy + backward + AdamW (LocalTrainer); "
      "median of %d steps after 1 warm-up\n\n",
      steps);
  std::printf("%-10s | %16s %8s %6s | %10s %8s %9s %8s\n", "policy", "peak activations", "vs none", "cut", "ms/step",
              "vs none", "min ms", "vs none");
  const double mib = 1024.0 * 1024.0;
  const double none_bytes = static_cast<double>(runs[0].peak_activations);
  const double none_median = median(runs[0].seconds);
  const double none_min = *std::min_element(runs[0].seconds.begin(), runs[0].seconds.end());
  for (const PolicyRun& run : runs) {
    const double bytes = static_cast<double>(run.peak_activations);
    const double med = median(run.seconds);
    const double fastest = *std::min_element(run.seconds.begin(), run.seconds.end());
    std::printf("%-10s | %12.1f MiB %7.2fx %5.2fx | %10.1f %7.2fx %9.1f %7.2fx\n", run.label.c_str(), bytes / mib,
                bytes / none_bytes, none_bytes / bytes, med * 1e3, med / none_median, fastest * 1e3,
                fastest / none_min);
  }
  return 0;
}
