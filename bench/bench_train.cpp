// bench_train: single-process GPT training throughput against the machine's sgemm ceiling measured
// in the same run. Prints, per config: ms/step, tokens/s, achieved training GFLOP/s (6 x matmul
// params x tokens + attention), the cblas_sgemm GFLOP/s and the ratio of the two.
// Usage: bench_train [--threads N] [--steps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "runtime/cpu/blas_core.hpp"
#include "runtime/device_factory.hpp"
#include "runtime/gemm_ceiling.hpp"
#include "runtime/local_trainer.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/modules/gpt_flops.hpp"
#include "runtime/random.hpp"

namespace tessera {
namespace {

using benchmarks::median;
using benchmarks::random_batch;

struct BenchConfig {
  const char* name;
  GptConfig model;
  std::int64_t batch;
};

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  reexec_with_better_blas_core(argv);
  int threads = 2, steps = 6;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_train [--threads N] [--steps N]\n");
      return 2;
    }
  }
  set_cpu_threads(threads);
  auto device = make_device(DeviceChoice::kAuto);

  // The ceiling: the best of a few GEMM shapes, so the ratio below is against the machine's best.
  GemmCeiling ceiling = measure_gemm_ceiling(*device, 1024, 1024, 1024, 0.5);
  for (auto [m, n, k] : {std::tuple{2048L, 2048L, 2048L}, std::tuple{1024L, 1536L, 384L}}) {
    const GemmCeiling c = measure_gemm_ceiling(*device, m, n, k, 0.5);
    if (c.gflops > ceiling.gflops) ceiling = c;
  }

  const BenchConfig configs[] = {
      {"tiny", {8192, 256, 4, 4, 256}, 4},
      {"small", {8192, 256, 6, 6, 384}, 4},
  };
  std::printf("bench_train: %d threads, %d timed steps (median) after 1 warm-up, f32, OpenBLAS core %s\n", threads,
              steps, blas_core_name().c_str());
  std::printf("sgemm ceiling: %.1f GFLOP/s (cblas_sgemm %ldx%ldx%ld, best of 3 shapes)\n\n", ceiling.gflops,
              static_cast<long>(ceiling.m), static_cast<long>(ceiling.n), static_cast<long>(ceiling.k));
  std::printf("%-6s %-28s %10s %10s %12s %12s %8s\n", "config", "model", "ms/step", "tokens/s", "train GF/s",
              "sgemm GF/s", "ratio");
  for (const BenchConfig& bc : configs) {
    Gpt model(bc.model);
    materialize_parameters(model, *device, 1);
    LocalTrainer trainer(model, *device, AdamWConfig{}, 1.0f);
    const std::vector<MicroBatch> batch{random_batch(*device, bc.model, bc.batch, 7)};
    trainer.step(batch, 1e-4f);  // warm-up
    std::vector<double> times;
    for (int s = 0; s < steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      trainer.step(batch, 1e-4f);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double sec = median(times);
    const double tokens = static_cast<double>(bc.batch * bc.model.max_seq_len);
    const double gflops = gpt_training_flops_per_token(bc.model, bc.model.max_seq_len) * tokens / sec / 1e9;
    std::printf("%-6s %-28s %10.1f %10.0f %12.1f %12.1f %7.1f%%\n", bc.name,
                (bc.model.to_string() + " B=" + std::to_string(bc.batch)).c_str(), sec * 1e3, tokens / sec, gflops,
                ceiling.gflops, 100.0 * gflops / ceiling.gflops);
  }
  return 0;
}
