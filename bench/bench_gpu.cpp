// bench_gpu: GPT training throughput and MFU on the GPU of every rank, then NCCL collective
// bandwidth over the ranks launched.
//
//   bench_gpu [--models 124m,1.5b] [--steps 10] [--warmup 3] [--micro-124m 16] [--micro-1.5b 8]
//             [--checkpointing-124m none] [--checkpointing-1.5b blocks] [--gemm-math bf16]
//             [--gemm-size 8192] [--min-mib 1] [--max-mib 256] [--skip-train] [--skip-attention]
//             [--skip-nccl]
//   mpirun -np <GPUs> bench_gpu ...     (data-parallel training and collectives across the GPUs)
//
// Models: GPT-2 124M-shaped (L12 C768 NH12 V50304 T1024) and 1.5B-shaped (L48 C1600 NH25 V50304
// T1024), trained by the ShardedEngine (ZeRO stage 0, f32 parameters) on each rank's GPU with the
// engine's NCCL communicator, through the Trainer as train_gpt does; micro-batch and activation
// checkpointing per model are flags whose defaults fit an 80 GB GPU. step time = median over the
// timed steps (each ends with a device synchronize) of the slowest rank.
// MFU = training FLOP/s per GPU (model/modules/gpt_flops.hpp) over (a) the GPU's dense bf16 peak
// from a table by device name (H100 SXM / H200 989, H100 PCIe 756, A100 312 TFLOP/s; else unknown)
// and (b) the best of a few runs of a large GEMM through the device's kernels with bf16 tensor-core
// math (cuBLAS, f32 in and out), measured in the same run.
// Attention (rank 0): forward and backward of the two models' attention shapes (micro-batch as above,
// T 1024) through the device's kernels, with f32 GEMM math (the tiled online-softmax kernel, f32) and
// with bf16 (cuDNN's fused flash attention where built, with the f32<->bf16 copies the table makes);
// time = best of 5 runs of 3 calls; TFLOP/s counts the causal half (forward 2*b*t^2*c, backward 2.5x).
// NCCL: all_reduce, reduce_scatter, all_gather on f32 and bf16 buffers of --min-mib .. --max-mib
// (x4 steps), time = median of the slowest rank, algbw and busbw with nccl-tests' definitions
// (busbw = algbw * 2(n-1)/n for all_reduce, * (n-1)/n otherwise; one rank: local copies).
// Without a usable GPU it prints one line saying why and exits 0.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt_flops.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/runtime/gemm_ceiling.hpp"
#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

namespace po = boost::program_options;

struct Options {
  std::string models = "124m,1.5b";
  int steps = 10;
  int warmup = 3;
  std::int64_t micro_124m = 16;
  std::int64_t micro_1p5b = 8;
  std::string checkpointing_124m = "none";
  std::string checkpointing_1p5b = "blocks";
  std::string gemm_math = "bf16";
  std::string compute_dtype = "bf16";
  std::int64_t gemm_size = 8192;
  double min_mib = 1;
  double max_mib = 256;
  bool skip_train = false;
  bool skip_attention = false;
  bool skip_nccl = false;
};

// The options, or nullopt after --help (printed on rank 0). Bad values throw std::invalid_argument.
std::optional<Options> parse(int argc, char** argv, bool print) {
  Options o;
  po::options_description flags("bench_gpu: GPT training tokens/s and MFU on each rank's GPU, then NCCL bandwidth");
  // clang-format off
  flags.add_options()("help,h", "this text")
      ("models", po::value(&o.models)->default_value(o.models), "comma-separated: 124m, 1.5b")
      ("steps", po::value(&o.steps)->default_value(o.steps), "timed training steps per model")
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed steps first")
      ("micro-124m", po::value(&o.micro_124m)->default_value(o.micro_124m), "micro-batch (sequences per rank) of 124m")
      ("micro-1.5b", po::value(&o.micro_1p5b)->default_value(o.micro_1p5b), "micro-batch of 1.5b")
      ("checkpointing-124m", po::value(&o.checkpointing_124m)->default_value(o.checkpointing_124m),
       "activation checkpointing of 124m: none, blocks, every:K, selective")
      ("checkpointing-1.5b", po::value(&o.checkpointing_1p5b)->default_value(o.checkpointing_1p5b),
       "activation checkpointing of 1.5b")
      ("gemm-math", po::value(&o.gemm_math)->default_value(o.gemm_math), "arithmetic of the f32 GEMMs: f32, tf32, bf16")
      ("compute-dtype", po::value(&o.compute_dtype)->default_value(o.compute_dtype),
       "what the training step computes in: bf16 (parameters stored bf16, f32 master) or f32")
      ("gemm-size", po::value(&o.gemm_size)->default_value(o.gemm_size), "M = N = K of the measured peak GEMM")
      ("min-mib", po::value(&o.min_mib)->default_value(o.min_mib), "smallest NCCL buffer (MiB of f32)")
      ("max-mib", po::value(&o.max_mib)->default_value(o.max_mib), "largest NCCL buffer (MiB of f32)")
      ("skip-train", po::bool_switch(&o.skip_train), "no training benchmark")
      ("skip-attention", po::bool_switch(&o.skip_attention), "no attention benchmark")
      ("skip-nccl", po::bool_switch(&o.skip_nccl), "no NCCL benchmark");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, flags), vm);
  if (vm.count("help")) {
    if (print) std::cout << flags << "\n";
    return std::nullopt;
  }
  po::notify(vm);
  if (o.steps < 1 || o.warmup < 0) throw std::invalid_argument("bench_gpu: --steps must be >= 1 and --warmup >= 0");
  if (o.micro_124m < 1 || o.micro_1p5b < 1)
    throw std::invalid_argument("bench_gpu: --micro-124m/--micro-1.5b must be >= 1");
  if (o.gemm_size < 256) throw std::invalid_argument("bench_gpu: --gemm-size must be >= 256");
  if (o.compute_dtype != "f32" && o.compute_dtype != "bf16") {
    throw std::invalid_argument("bench_gpu: --compute-dtype '" + o.compute_dtype + "': use f32 or bf16");
  }
  if (!(o.min_mib > 0 && o.max_mib >= o.min_mib))
    throw std::invalid_argument("bench_gpu: need 0 < --min-mib <= --max-mib");
  return o;
}

GemmMath gemm_math_of(const std::string& text) {
  if (text == "f32") return GemmMath::kF32;
  if (text == "tf32") return GemmMath::kTf32;
  if (text == "bf16") return GemmMath::kBf16;
  throw std::invalid_argument("bench_gpu: --gemm-math '" + text + "': use f32, tf32 or bf16");
}

// Dense bf16 tensor-core peak in TFLOP/s by device name, or 0 when unknown.
double table_peak_tflops(const std::string& name) {
  const auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H100") && (has("PCIe") || has("PCIE"))) return 756;
  if (has("H100") || has("H200")) return 989;
  if (has("A100")) return 312;
  return 0;
}

struct ModelRun {
  const char* name;
  GptConfig config;
  std::int64_t micro;
  std::string recompute;  // activation checkpointing policy
};

struct AttentionDims {
  const char* name;
  std::int64_t b, t, c, nh;
};

double max_over_ranks(double x) {
  double out = x;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

void bench_model(const ModelRun& run, const Options& o, Device& device, Communicator& world, Communicator& device_world,
                 double table_peak, double gemm_peak) {
  const std::int64_t t = run.config.max_seq_len;
  Gpt model(run.config);
  apply_recompute(model, parse_recompute_policy(run.recompute));
  ShardingConfig sharding;
  sharding.stage = ZeroStage::kStage0;
  sharding.precision.compute_dtype = parse_dtype(o.compute_dtype, "--compute-dtype");
  sharding.precision.param_dtype = sharding.precision.compute_dtype;
  ShardedEngine engine(model, device, device_world, sharding, 1234);
  Trainer trainer(engine);
  std::vector<double> seconds;
  float loss = 0.0f;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const MicroBatch batch = benchmarks::random_batch(device, run.config, run.micro, 1000 + s * 31 + world.rank());
    device.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    loss = trainer.train_step({batch}, 1e-4f).loss;
    device.synchronize();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= o.warmup) seconds.push_back(max_over_ranks(dt));
  }
  const double step = benchmarks::median(seconds);
  const double tokens_per_s = static_cast<double>(run.micro * t * world.size()) / step;
  const double flops_per_gpu = tokens_per_s / world.size() * gpt_training_flops_per_token(run.config, t);
  const AllocatorStats pool = device.allocator_stats();
  if (world.rank() != 0) return;
  char mfu_peak[16] = "unknown";
  if (table_peak > 0) std::snprintf(mfu_peak, sizeof mfu_peak, "%.1f%%", 100.0 * flops_per_gpu / (table_peak * 1e12));
  std::printf("%-6s %11lld %5lld %-10s %9.1f %11.0f %8.1f %9s %8.1f%% %12s  loss %.3f; pool %s\n", run.name,
              static_cast<long long>(model.parameter_count()), static_cast<long long>(run.micro), run.recompute.c_str(),
              step * 1e3, tokens_per_s, flops_per_gpu / 1e12, mfu_peak, 100.0 * flops_per_gpu / (gemm_peak * 1e12),
              format_bytes(device.memory().peak_total()).c_str(), loss, pool.describe().c_str());
  std::fflush(stdout);
}

void bench_training(const Options& o, const RankInfo& info, Device& device, Communicator& world,
                    Communicator& device_world) {
  const std::string name = device.name();
  const double table_peak = table_peak_tflops(name);
  // The measured peak: the same GPU's GEMM with bf16 tensor-core math on f32 tensors.
  auto bf16_device = make_rank_device(DeviceChoice::kCuda, info, DeviceOptions{-1, GemmMath::kBf16});
  double gemm_peak = 0.0;
  {
    const std::int64_t n = o.gemm_size;
    gemm_peak = measure_gemm_ceiling(*bf16_device, n, n, n, 1.0).gflops / 1e3;
  }
  bf16_device.reset();
  if (world.rank() == 0) {
    std::printf(
        "# %s, %d rank(s); GEMM math %s; bf16 dense peak: %s; measured %lld^3 GEMM (bf16 tensor cores, f32 "
        "in/out): %.1f TFLOP/s\n",
        name.c_str(), world.size(), o.gemm_math.c_str(),
        table_peak > 0 ? (std::to_string(static_cast<int>(table_peak)) + " TFLOP/s (table)").c_str()
                       : "unknown (not in the table)",
        static_cast<long long>(o.gemm_size), gemm_peak);
    std::printf("# ZeRO 0, compute %s (parameters stored %s, f32 master), AdamW; step = median over %d steps (after "
                "%d) of the slowest rank\n",
                o.compute_dtype.c_str(), o.compute_dtype.c_str(), o.steps, o.warmup);
    std::printf("%-6s %11s %5s %-10s %9s %11s %8s %9s %9s %12s\n", "model", "params", "micro", "ckpt", "step_ms",
                "tokens/s", "TFLOP/s", "MFU_peak", "MFU_gemm", "peak_mem");
  }
  const ModelRun runs[] = {
      {"124m", GptConfig{50304, 1024, 12, 12, 768}, o.micro_124m, o.checkpointing_124m},
      {"1.5b", GptConfig{50304, 1024, 48, 25, 1600}, o.micro_1p5b, o.checkpointing_1p5b},
  };
  std::stringstream list(o.models);
  std::string wanted;
  while (std::getline(list, wanted, ',')) {
    const auto run =
        std::find_if(std::begin(runs), std::end(runs), [&](const ModelRun& r) { return wanted == r.name; });
    if (run == std::end(runs))
      throw std::invalid_argument("bench_gpu: --models: unknown model '" + wanted + "' (124m, 1.5b)");
    try {
      bench_model(*run, o, device, world, device_world, table_peak, gemm_peak);
    } catch (const std::bad_alloc& e) {
      if (world.rank() == 0) {
        std::printf("%-6s out of GPU memory: %s\n       (use a smaller --micro-%s or --checkpointing-%s blocks)\n",
                    run->name, e.what(), run->name, run->name);
      }
      device.synchronize();
    }
  }
}

// Seconds per call: median over `iters` calls (after 2 untimed) of the slowest rank's time, each call
// started after a host barrier and ended when the GPU finished it.
double time_collective(Communicator& world, Device& device, int iters, const std::function<Work()>& op) {
  Stream& compute = device.stream(StreamRole::kCompute);
  for (int i = 0; i < 2; ++i) {
    op().wait();
    compute.synchronize();
  }
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    world.barrier().wait();
    const auto t0 = std::chrono::steady_clock::now();
    op().wait();
    compute.synchronize();
    times.push_back(max_over_ranks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  return benchmarks::median(times);
}

void bench_nccl(const Options& o, Device& device, Communicator& world, Communicator& nccl) {
  const int n = nccl.size();
  const double ring = static_cast<double>(n - 1) / n;
  if (world.rank() == 0) {
    std::printf(
        "\n# NCCL over %d rank(s)%s; time = median of the slowest rank; GB/s = 1e9 B/s (nccl-tests)\n", n,
        n == 1 ? " (one rank: the collectives are local copies; launch one rank per GPU for bus bandwidth)" : "");
    std::printf("%-15s %-5s %10s %10s %8s %8s\n", "collective", "dtype", "MiB", "time_us", "algbw", "busbw");
  }
  const auto max_bytes = static_cast<std::size_t>(o.max_mib * (1 << 20));
  Tensor in =
      Tensor::zeros(device, {static_cast<std::int64_t>(max_bytes / 4)}, DType::kF32, MemoryCategory::kCommBuffers);
  Tensor out =
      Tensor::zeros(device, {static_cast<std::int64_t>(max_bytes / 4)}, DType::kF32, MemoryCategory::kCommBuffers);
  for (double mib = o.min_mib; mib <= o.max_mib * 1.0001; mib *= 4) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      // The element count of `mib` MiB of f32, a multiple of the ranks (bf16 moves half the bytes).
      const std::size_t f32_elements = static_cast<std::size_t>(mib * (1 << 20)) / 4;
      const std::size_t total = f32_elements / static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
      const std::size_t per_rank = total / static_cast<std::size_t>(n);
      const std::size_t size_bytes = total * dtype_size(dtype);
      const int iters = static_cast<int>(std::clamp(2048.0 / mib, 10.0, 50.0));
      struct Row {
        const char* name;
        double factor;
        std::function<Work()> op;
      };
      const Row rows[] = {
          {"all_reduce", 2 * ring, [&] { return nccl.all_reduce(Span(out.data(), total), dtype, ReduceOp::kSum); }},
          {"reduce_scatter", ring,
           [&] {
             return nccl.reduce_scatter(ConstSpan(in.data(), total), Span(out.data(), per_rank), dtype, ReduceOp::kSum);
           }},
          {"all_gather", ring,
           [&] { return nccl.all_gather(ConstSpan(in.data(), per_rank), Span(out.data(), total), dtype); }},
      };
      for (const Row& row : rows) {
        const double seconds = time_collective(world, device, iters, row.op);
        const double algbw = static_cast<double>(size_bytes) / seconds / 1e9;
        if (world.rank() == 0) {
          std::printf("%-15s %-5s %10.2f %10.1f %8.2f %8.2f\n", row.name, dtype_name(dtype),
                      static_cast<double>(size_bytes) / (1 << 20), seconds * 1e6, algbw, algbw * row.factor);
        }
      }
    }
    if (world.rank() == 0) std::fflush(stdout);
  }
}

// Seconds of one attention forward (backward = false) or backward at `s` on `device`: best of 5 runs
// of 3 calls, each run ending with a synchronize.
double time_attention(Device& device, const AttentionDims& s, bool backward) {
  const Kernels& k = device.kernels();
  auto buffer = [&](std::int64_t n) { return Tensor::zeros(device, {n}, DType::kF32, MemoryCategory::kWorkspace); };
  Tensor qkv = buffer(s.b * s.t * 3 * s.c), out = buffer(s.b * s.t * s.c), lse = buffer(s.b * s.nh * s.t);
  Tensor dout = buffer(s.b * s.t * s.c), dqkv = buffer(s.b * s.t * 3 * s.c), delta = buffer(s.b * s.nh * s.t);
  const std::size_t bytes = k.attention_scratch_bytes(s.b, s.t, s.c, s.nh, DType::kF32);
  const std::shared_ptr<Storage> scratch =
      bytes == 0 ? nullptr : Storage::allocate(device, bytes, MemoryCategory::kWorkspace);
  void* scratch_ptr = scratch ? scratch->data() : nullptr;
  auto call = [&] {
    if (backward) {
      k.attention_backward(dqkv.data_as<float>(), delta.data_as<float>(), dout.data_as<float>(), qkv.data_as<float>(),
                           out.data_as<float>(), lse.data_as<float>(), s.b, s.t, s.c, s.nh, scratch_ptr);
    } else {
      k.attention_forward(out.data_as<float>(), lse.data_as<float>(), qkv.data_as<float>(), s.b, s.t, s.c, s.nh,
                          scratch_ptr);
    }
  };
  call();  // builds what the kernels cache per shape
  device.synchronize();
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) call();
    device.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3);
  }
  return best;
}

void bench_attention(const Options& o, const RankInfo& info) {
  const AttentionDims shapes[] = {{"124m", o.micro_124m, 1024, 768, 12}, {"1.5b", o.micro_1p5b, 1024, 1600, 25}};
  std::printf("\n# attention, forward and backward; TFLOP/s of the causal half (forward 2*b*t^2*c, backward 2.5x)\n");
  std::printf("%-6s %-6s %-60s %9s %9s %9s %9s\n", "shape", "math", "kernel", "fwd_ms", "fwd_TF/s", "bwd_ms",
              "bwd_TF/s");
  for (GemmMath math : {GemmMath::kF32, GemmMath::kBf16}) {
    auto device = make_rank_device(DeviceChoice::kCuda, info, DeviceOptions{-1, math});
    for (const AttentionDims& s : shapes) {
      const double fwd_flops = 2.0 * s.b * s.t * s.t * s.c;
      try {
        const double fwd = time_attention(*device, s, false), bwd = time_attention(*device, s, true);
        std::printf("%-6s %-6s %-60.60s %9.2f %9.1f %9.2f %9.1f\n", s.name, gemm_math_name(math),
                    device->kernels().attention_kernel().c_str(), fwd * 1e3, fwd_flops / fwd / 1e12, bwd * 1e3,
                    2.5 * fwd_flops / bwd / 1e12);
      } catch (const std::exception& e) {
        std::printf("%-6s %-6s failed: %s\n", s.name, gemm_math_name(math), e.what());
      }
      std::fflush(stdout);
    }
  }
}

int run(DistributedContext& dist) {
  const std::optional<Options> parsed = parse(dist.argc(), dist.argv(), dist.rank() == 0);
  if (!parsed) return 0;
  const Options& o = *parsed;
  Communicator& world = dist.world();
  // Every rank must see a GPU, or none runs the benchmark.
  int usable = device_available(DeviceChoice::kCuda) ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&usable, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!everywhere) {
    if (dist.rank() == 0) {
      std::printf("bench_gpu: nothing to measure: %s\n",
                  usable ? "a rank has no usable GPU" : device_unavailable_reason(DeviceChoice::kCuda).c_str());
    }
    return 0;
  }
  auto device = make_rank_device(DeviceChoice::kCuda, dist.rank_info(), DeviceOptions{-1, gemm_math_of(o.gemm_math)});
  const std::unique_ptr<Communicator> device_world = make_device_world(*device, world, dist.comm_options());
  if (!o.skip_train) bench_training(o, dist.rank_info(), *device, world, *device_world);
  if (!o.skip_attention && world.rank() == 0) bench_attention(o, dist.rank_info());
  if (!o.skip_nccl) bench_nccl(o, *device, world, *device_world);
  device->synchronize();
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::run_distributed(argc, argv, tessera::run); }
