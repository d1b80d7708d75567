// bench_kernels: times every CpuKernels op at the shapes of a small GPT (L=6, C=384, NH=6, T=256,
// B=4, V=8192; B*T = 1024 rows) on the chosen thread count, and prints ms and GFLOP/s (GEMM-based
// ops) or GB/s (memory-bound ops), next to plain cblas_sgemm (on OpenBLAS's own threads) and the
// kernels' gemm (fixed tiles on the chosen threads) for a 1024x1536x384 product. Every memory-bound
// row is set against a STREAM triad measured in the same run: one over arrays much
// larger than the last-level cache (DRAM bandwidth), printed first, and one whose arrays add up to
// the row's working set (every distinct array the kernel touches, once), measured just before it
// (the same cache level). Bytes are counted as STREAM counts them: every array read or written
// once (an array both read and written counts twice, as traffic, and once in the working set). Times are the best of
// the timed calls (as STREAM reports its best: the call least disturbed by other processes). The last lines add the
// per-layer ops up into one training step, so the share of time outside GEMMs is visible.
//
// Usage: bench_kernels [--threads N] [--min-seconds S] [--config FILE]
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "best_call.hpp"
#include "flags/program_options.hpp"
#include "stream_triad.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device.hpp"

namespace po = boost::program_options;

namespace {

using tessera::CpuKernels;
using tessera::benchmarks::StreamTriad;

constexpr std::int64_t kB = 4, kT = 256, kC = 384, kNH = 6, kV = 8192, kL = 6;
constexpr std::int64_t kN = kB * kT;

// 64-byte aligned float buffer filled with small random values.
class Buffer {
 public:
  explicit Buffer(std::int64_t n, float lo = -1.0f, float hi = 1.0f) : n_(n) {
    const std::size_t bytes = (static_cast<std::size_t>(n) * sizeof(float) + 63) / 64 * 64;
    data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    std::mt19937 gen(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> dist(lo, hi);
    for (std::int64_t i = 0; i < n; ++i) data_[i] = dist(gen);
  }
  ~Buffer() { std::free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* get() { return data_; }

 private:
  std::int64_t n_;
  float* data_;
};

double g_min_seconds = 0.25;
double g_dram_triad_gbs = 0.0;  // GB/s of the triad over arrays much larger than the last-level cache

// Milliseconds of the fastest call, after one warm-up call, over at least g_min_seconds and 5 calls.
double time_ms(const std::function<void()>& body) { return tessera::benchmarks::best_call_ms(g_min_seconds, 5, body); }

// GB/s of a triad over `bytes` bytes (three arrays of bytes / 12 floats).
double triad_gbs(double bytes) {
  StreamTriad triad(static_cast<std::int64_t>(bytes / (3.0 * sizeof(float))));
  const double ms = time_ms([&] { triad.run(); });
  return triad.bytes() / ms * 1e-6;
}

void print_header() {
  std::printf("%-26s %-24s %12s %17s %15s %9s %9s\n", "op", "shape", "time", "rate", "triad same set", "of triad",
              "of DRAM");
}

void gemm_row(const char* name, const std::string& shape, double ms, double flops) {
  std::printf("%-26s %-24s %9.3f ms %9.1f GFLOP/s\n", name, shape.c_str(), ms, flops / ms * 1e-6);
}

// Times a memory-bound op that reads and writes `bytes` bytes (STREAM's count) over a working set
// of `footprint` bytes, right after a triad over a working set as large, and prints both rates and
// the op's fraction of each triad. Returns the op's milliseconds.
double memory_row(const char* name, const std::string& shape, double bytes, double footprint,
                  const std::function<void()>& body) {
  const double triad = triad_gbs(footprint);
  const double ms = time_ms(body);
  const double gbs = bytes / ms * 1e-6;
  std::printf("%-26s %-24s %9.3f ms %9.1f GB/s %10.1f GB/s %8.0f%% %8.0f%%\n", name, shape.c_str(), ms, gbs, triad,
              100.0 * gbs / triad, 100.0 * gbs / g_dram_triad_gbs);
  return ms;
}

// An op whose arrays are each read or written once: the working set is the traffic.
double memory_row(const char* name, const std::string& shape, double bytes, const std::function<void()>& body) {
  return memory_row(name, shape, bytes, bytes, body);
}

std::string dims(std::int64_t a, std::int64_t b, std::int64_t c = 0) {
  char text[64];
  if (c != 0) {
    std::snprintf(text, sizeof text, "%lldx%lldx%lld", static_cast<long long>(a), static_cast<long long>(b),
                  static_cast<long long>(c));
  } else {
    std::snprintf(text, sizeof text, "%lldx%lld", static_cast<long long>(a), static_cast<long long>(b));
  }
  return text;
}

// Parses the flags into g_min_seconds and the thread count; returns false after printing --help.
bool parse_options(int argc, char** argv) {
  int threads = 0;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("threads", tessera::value_with_default(&threads), "CPU threads (0: OMP_NUM_THREADS or all cores)")
      ("min-seconds", tessera::value_with_default(&g_min_seconds),
       "seconds each op (and each triad) is timed for, at least 5 calls");
  // clang-format on
  tessera::ProgramOptions program("bench_kernels",
                                  "bench_kernels: every CPU kernel at the shapes of a small GPT, memory-bound ones "
                                  "against a STREAM triad measured in the same run\n"
                                  "Usage: bench_kernels [options]");
  program.add(options);
  if (!program.parse(argc, argv)) return false;
  if (threads < 0) throw std::invalid_argument("--threads " + std::to_string(threads) + ": use 0 or more");
  if (!(g_min_seconds >= 0.0)) {
    throw std::invalid_argument("--min-seconds " + std::to_string(g_min_seconds) + ": use 0 or more");
  }
  tessera::set_cpu_threads(threads);
  return true;
}

// The benchmark: the triads and every op's row, then the step estimate. Returns the exit status.
int run(int argc, char** argv) {
  if (!parse_options(argc, argv)) return 0;
  CpuKernels k;
  std::printf("bench_kernels: GPT L=%lld C=%lld NH=%lld T=%lld B=%lld V=%lld, %d threads\n", static_cast<long long>(kL),
              static_cast<long long>(kC), static_cast<long long>(kNH), static_cast<long long>(kT),
              static_cast<long long>(kB), static_cast<long long>(kV), tessera::cpu_threads());
  std::printf(
      "OpenBLAS kernels: %s (if this names an older CPU than the machine's, e.g. Prescott on an\n"
      "AVX-512 machine, set OPENBLAS_CORETYPE, e.g. OPENBLAS_CORETYPE=SkylakeX)\n",
      openblas_get_corename());
  std::printf("CPU kernel level: %s (%s selects one of avx512, avx2, portable)\n", tessera::kernel_level_name().c_str(),
              tessera::kCpuKernelsEnv);
  {
    // The DRAM reference: three arrays of at least 128 MiB and 4x the last-level cache each.
    const double llc = static_cast<double>(tessera::benchmarks::last_level_cache_bytes());
    const double array_bytes = std::max(128.0 * (1 << 20), 4.0 * llc);
    g_dram_triad_gbs = triad_gbs(3.0 * array_bytes);
    std::printf(
        "STREAM triad a = b + s*c over 3 x %.0f MiB (last-level cache %.0f MiB): %.1f GB/s (DRAM)\n"
        "memory-bound rows: GB/s counting every array read or written once, as %% of a triad over the same\n"
        "working set timed just before the row, and as %% of the DRAM triad\n\n",
        array_bytes / (1 << 20), llc / (1 << 20), g_dram_triad_gbs);
  }
  print_header();

  // Plain cblas_sgemm on OpenBLAS's own threads (set_cpu_threads keeps it at one: the kernels thread
  // their GEMM tiles themselves): the ceiling, and the kernels' gemm on the same product beside it.
  {
    Buffer a(1024 * 384), b(384 * 1536), c(1024 * 1536);
    const int threads = tessera::cpu_threads();
    openblas_set_num_threads(threads);
    const double ms = time_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1024, 1536, 384, 1.0f, a.get(), 384, b.get(), 1536, 0.0f,
                  c.get(), 1536);
    });
    tessera::set_cpu_threads(threads);
    gemm_row("cblas_sgemm", dims(1024, 1536, 384), ms, 2.0 * 1024 * 1536 * 384);
    const double tiled_ms =
        time_ms([&] { k.gemm(false, false, 1024, 1536, 384, 1.0f, a.get(), 384, b.get(), 1536, 0.0f, c.get(), 1536); });
    gemm_row("gemm (fixed tiles)", dims(1024, 1536, 384), tiled_ms, 2.0 * 1024 * 1536 * 384);
  }

  // Linear layers of one block and the head: forward and backward.
  struct Linear {
    const char* fwd;
    const char* bwd;
    std::int64_t c, oc;
    bool bias;
    double fwd_ms = 0, bwd_ms = 0;
  };
  std::vector<Linear> linears = {{"linear fwd qkv", "linear bwd qkv", kC, 3 * kC, true},
                                 {"linear fwd attn-proj", "linear bwd attn-proj", kC, kC, true},
                                 {"linear fwd fc", "linear bwd fc", kC, 4 * kC, true},
                                 {"linear fwd fc-proj", "linear bwd fc-proj", 4 * kC, kC, true},
                                 {"linear fwd lm-head", "linear bwd lm-head", kC, kV, false}};
  for (auto& l : linears) {
    Buffer inp(kN * l.c), w(l.oc * l.c), bias(l.oc), out(kN * l.oc), dinp(kN * l.c), dw(l.oc * l.c), db(l.oc);
    const double flops = 2.0 * kN * l.c * l.oc;
    float* bias_or_null = l.bias ? bias.get() : nullptr;
    float* dbias_or_null = l.bias ? db.get() : nullptr;
    l.fwd_ms = time_ms([&] { k.linear_forward(out.get(), inp.get(), w.get(), bias_or_null, kN, l.c, l.oc); });
    gemm_row(l.fwd, dims(kN, l.c, l.oc), l.fwd_ms, flops);
    l.bwd_ms = time_ms(
        [&] { k.linear_backward(dinp.get(), dw.get(), dbias_or_null, out.get(), inp.get(), w.get(), kN, l.c, l.oc); });
    gemm_row(l.bwd, dims(kN, l.c, l.oc), l.bwd_ms, 2.0 * flops);
  }

  // Attention (FLOPs counted as the dense products, 4 B T^2 C forward and 8 B T^2 C backward).
  double attn_fwd_ms = 0, attn_bwd_ms = 0;
  {
    Buffer qkv(kN * 3 * kC), out(kN * kC), lse(kB * kNH * kT), dout(kN * kC), dqkv(kN * 3 * kC), delta(kB * kNH * kT);
    const double flops = 4.0 * kB * kT * kT * kC;
    attn_fwd_ms = time_ms([&] { k.attention_forward(out.get(), lse.get(), qkv.get(), kB, kT, kC, kNH, nullptr); });
    gemm_row("attention fwd", "B4 T256 C384 NH6", attn_fwd_ms, flops);
    attn_bwd_ms = time_ms([&] {
      k.attention_backward(dqkv.get(), delta.get(), dout.get(), qkv.get(), out.get(), lse.get(), kB, kT, kC, kNH,
                           nullptr);
    });
    gemm_row("attention bwd", "B4 T256 C384 NH6", attn_bwd_ms, 2.0 * flops);
  }

  // Memory-bound ops.
  double ln_fwd_ms = 0, ln_bwd_ms = 0, gelu_fwd_ms = 0, gelu_bwd_ms = 0, add_ms = 0;
  {
    Buffer inp(kN * kC), out(kN * kC), mean(kN), rstd(kN), w(kC), b(kC), dinp(kN * kC), dw(kC), db(kC);
    const double bytes = 2.0 * kN * kC * 4;
    ln_fwd_ms = memory_row("layernorm fwd", dims(kN, kC), bytes, [&] {
      k.layernorm_forward(out.get(), mean.get(), rstd.get(), inp.get(), w.get(), b.get(), kN, kC, 1e-5f);
    });
    ln_bwd_ms = memory_row("layernorm bwd", dims(kN, kC), 1.5 * bytes, [&] {
      k.layernorm_backward(dinp.get(), dw.get(), db.get(), out.get(), inp.get(), w.get(), mean.get(), rstd.get(), kN,
                           kC);
    });
    add_ms = memory_row("add (residual)", dims(kN, kC), 1.5 * bytes,
                        [&] { k.add(dinp.get(), out.get(), inp.get(), kN * kC); });
  }
  {
    const std::int64_t n = kN * 4 * kC;
    Buffer inp(n, -4.0f, 4.0f), out(n), dinp(n);
    gelu_fwd_ms =
        memory_row("gelu fwd", dims(kN, 4 * kC), 2.0 * n * 4, [&] { k.gelu_forward(out.get(), inp.get(), n); });
    gelu_bwd_ms = memory_row("gelu bwd", dims(kN, 4 * kC), 3.0 * n * 4,
                             [&] { k.gelu_backward(dinp.get(), inp.get(), out.get(), n); });
  }
  double emb_fwd_ms = 0, emb_bwd_ms = 0, ce_fwd_ms = 0, ce_bwd_ms = 0;
  {
    std::vector<std::int32_t> tokens(kN);
    for (std::int64_t i = 0; i < kN; ++i) tokens[i] = static_cast<std::int32_t>((i * 7919) % kV);
    Buffer wte(kV * kC), wpe(kT * kC), out(kN * kC), dwte(kV * kC), dwpe(kT * kC);
    emb_fwd_ms = memory_row("embedding fwd", dims(kN, kC), 3.0 * kN * kC * 4, [&] {
      k.embedding_forward(out.get(), tokens.data(), wte.get(), wpe.get(), kB, kT, kC, kV);
    });
    emb_bwd_ms = memory_row("embedding bwd", dims(kN, kC), 4.0 * kN * kC * 4, (2.0 * kN + kT) * kC * 4, [&] {
      k.embedding_backward(dwte.get(), dwpe.get(), out.get(), tokens.data(), kB, kT, kC, kV);
    });

    // The backward runs in place over the logits, as the loss module calls it (the values it
    // leaves cost the same: the exp is branch-free).
    Buffer logits(kN * kV, -5.0f, 5.0f), losses(kN), lse(kN);
    ce_fwd_ms = memory_row("cross_entropy fwd", dims(kN, kV), 1.0 * kN * kV * 4, [&] {
      k.cross_entropy_forward(losses.get(), lse.get(), logits.get(), tokens.data(), kN, kV);
    });
    ce_bwd_ms = memory_row("cross_entropy bwd", dims(kN, kV), 2.0 * kN * kV * 4, 1.0 * kN * kV * 4, [&] {
      k.cross_entropy_backward(logits.get(), logits.get(), lse.get(), tokens.data(), 1.0f / kN, kN, kV);
    });
  }
  // Whole-model vectors: AdamW, grad norm, overflow check, bf16 cast.
  const std::int64_t params = kV * kC + kT * kC + kL * (12 * kC * kC + 13 * kC) + 2 * kC;
  double adamw_ms = 0, norm_ms = 0, finite_ms = 0;
  {
    Buffer p(params), g(params), m(params), v(params, 0.0f, 1e-4f);
    std::vector<std::uint16_t> bf(static_cast<std::size_t>(params));
    tessera::AdamWScalars s;
    s.lr = 1e-4f;
    s.weight_decay = 0.1f;
    s.bias_correction1 = 0.5f;
    s.bias_correction2 = 0.1f;
    s.grad_scale = 0.5f;  // a clip (and loss-scale) factor applied inside the update, as the step does
    const std::string shape = std::to_string(params);
    adamw_ms = memory_row("adamw_update", shape, 7.0 * params * 4, 4.0 * params * 4,
                          [&] { k.adamw_update(p.get(), g.get(), m.get(), v.get(), params, s); });
    {
      // 8-bit AdamW over the same elements, padded to whole blocks of 2048: reads p, g, both codes
      // and scales, writes p, codes and scales.
      constexpr std::int64_t kBlock = 2048;
      const std::int64_t padded = (params + kBlock - 1) / kBlock * kBlock;
      Buffer p8(padded), g8(padded), m_scale(padded / kBlock, 0.0f, 0.0f), v_scale(padded / kBlock, 0.0f, 0.0f);
      std::vector<std::int8_t> m_codes(static_cast<std::size_t>(padded));
      std::vector<std::uint8_t> v_codes(static_cast<std::size_t>(padded));
      const tessera::ParamSegment all[] = {{0, params, true}};
      memory_row("adamw8bit_update", std::to_string(padded), (4.0 + 4.0 + 4.0 + 2.0 + 2.0) * padded,
                 (4.0 + 4.0 + 2.0) * padded, [&] {
                   k.adamw8bit_update(p8.get(), g8.get(), m_codes.data(), m_scale.get(), v_codes.data(), v_scale.get(),
                                      padded, kBlock, all, s, s);
                 });
    }
    double sink = 0.0;
    double norm = 0.0;
    std::int32_t non_finite = 0;
    norm_ms = memory_row("sum_squares", shape, 1.0 * params * 4, [&] {
      k.sum_squares(g.get(), params, &norm);
      sink += norm;
    });
    // The accumulation of a reduced gradient shard that also yields its sum of squares (ZeRO 2-3).
    {
      Buffer shard(params);
      memory_row("add_sum_squares", shape, 3.0 * params * 4, 2.0 * params * 4, [&] {
        k.add_sum_squares(shard.get(), shard.get(), g.get(), params, &norm);
        sink += norm;
      });
    }
    finite_ms = memory_row("has_non_finite", shape, 1.0 * params * 4, [&] {
      k.has_non_finite(g.get(), params, &non_finite);
      sink += non_finite;
    });
    memory_row("convert f32->bf16", shape, 6.0 * params,
               [&] { k.convert(p.get(), tessera::DType::kF32, bf.data(), tessera::DType::kBF16, params); });
    if (sink < 0) std::printf("%g\n", sink);
  }

  // One training step from the pieces above.
  double gemm_ms = 0.0, gemm_flops = 0.0;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    const double times = i + 1 == linears.size() ? 1.0 : static_cast<double>(kL);
    gemm_ms += times * (linears[i].fwd_ms + linears[i].bwd_ms);
    gemm_flops += times * 6.0 * kN * linears[i].c * linears[i].oc;
  }
  const double attn_ms = kL * (attn_fwd_ms + attn_bwd_ms);
  const double attn_flops = kL * 12.0 * kB * kT * kT * kC;
  const double other_ms = kL * (2 * ln_fwd_ms + 2 * ln_bwd_ms + 2 * add_ms + gelu_fwd_ms + gelu_bwd_ms) + ln_fwd_ms +
                          ln_bwd_ms + emb_fwd_ms + emb_bwd_ms + ce_fwd_ms + ce_bwd_ms + adamw_ms + norm_ms + finite_ms;
  const double total = gemm_ms + attn_ms + other_ms;
  std::printf("\nstep estimate (sum of the ops above, %lld params):\n", static_cast<long long>(params));
  std::printf("  linear layers   %9.2f ms  (%5.1f%%)  %7.1f GFLOP/s\n", gemm_ms, 100 * gemm_ms / total,
              gemm_flops / gemm_ms * 1e-6);
  std::printf("  attention       %9.2f ms  (%5.1f%%)  %7.1f GFLOP/s (dense count)\n", attn_ms, 100 * attn_ms / total,
              attn_flops / attn_ms * 1e-6);
  std::printf("  everything else %9.2f ms  (%5.1f%%)\n", other_ms, 100 * other_ms / total);
  std::printf("  total           %9.2f ms   %7.1f GFLOP/s model FLOPs (6 N P + attention)\n", total,
              (gemm_flops + attn_flops) / total * 1e-6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
}
