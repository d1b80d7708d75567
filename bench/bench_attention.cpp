// bench_attention: the CPU attention kernels (tiled, online softmax) at growing sequence length for
// one head size, forward and backward, with what a layer keeps for backward. Each row runs the same
// number of tokens (B = tokens / T), so a kernel whose cost grows only with the causal work shows
// a time linear in T. FLOPs are the causal products actually needed (q k^T and P v over the
// lower triangle: 2 T^2 hs per pair forward, twice that backward); the backward recomputes q k^T,
// which is not counted. "kept" is the bytes a layer keeps for backward beyond its out tensor (lse,
// B NH T f32); the kernel of the previous design kept the (B, NH, T, T) probabilities, printed
// beside it for comparison. Times are the best of the timed calls.
//
// Usage: bench_attention [--threads N] [--min-seconds S] [--tokens N] [--seq-len T]... [--dim C]
//                        [--heads NH]
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "best_call.hpp"
#include "flags/program_options.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device.hpp"

namespace po = boost::program_options;

namespace {

struct Options {
  int threads = 0;
  double min_seconds = 0.5;
  std::int64_t tokens = 4096;
  std::vector<std::int64_t> seq_lens{256, 1024, 4096};
  std::int64_t dim = 384, heads = 6;  // the small GPT: head size 64
};

// Milliseconds of the fastest call, after one warm-up call, over at least `min_seconds` and 3 calls.
double time_ms(double min_seconds, const std::function<void()>& body) {
  return tessera::benchmarks::best_call_ms(min_seconds, 3, body);
}

std::vector<float> random_floats(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto& x : out) x = dist(gen);
  return out;
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", bytes * 1e-6);
  return text;
}

bool parse_options(int argc, char** argv, Options& o) {
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("threads", tessera::value_with_default(&o.threads), "CPU threads (0: OMP_NUM_THREADS or all cores)")
      ("min-seconds", tessera::value_with_default(&o.min_seconds), "seconds each kernel is timed for, at least 3 calls")
      ("tokens", tessera::value_with_default(&o.tokens), "tokens per call (B = tokens / T, at least 1)")
      ("seq-len", po::value(&o.seq_lens)->multitoken(), "sequence lengths T (default: 256 1024 4096)")
      ("dim", tessera::value_with_default(&o.dim), "channels C")
      ("heads", tessera::value_with_default(&o.heads), "heads NH (head size C / NH)");
  // clang-format on
  tessera::ProgramOptions program("bench_attention",
                                  "bench_attention: the tiled CPU attention kernels at growing sequence length\n"
                                  "Usage: bench_attention [options]");
  program.add(options);
  if (!program.parse(argc, argv)) return false;
  if (o.threads < 0) throw std::invalid_argument("--threads " + std::to_string(o.threads) + ": use 0 or more");
  if (o.heads <= 0 || o.dim % o.heads != 0) {
    throw std::invalid_argument("--dim " + std::to_string(o.dim) + " --heads " + std::to_string(o.heads) +
                                ": choose heads that divide dim");
  }
  for (std::int64_t t : o.seq_lens) {
    if (t <= 0) throw std::invalid_argument("--seq-len " + std::to_string(t) + ": use 1 or more");
  }
  tessera::set_cpu_threads(o.threads);
  return true;
}

int run(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 0;
  tessera::CpuKernels k;
  const std::int64_t c = o.dim, nh = o.heads, hs = c / nh;
  std::printf("bench_attention: C=%lld NH=%lld (head size %lld), %lld tokens per call, %d threads\n",
              static_cast<long long>(c), static_cast<long long>(nh), static_cast<long long>(hs),
              static_cast<long long>(o.tokens), tessera::cpu_threads());
  std::printf("%6s %4s %11s %11s %11s %11s %11s %13s %16s\n", "T", "B", "fwd ms", "fwd GF/s", "bwd ms", "bwd GF/s",
              "fwd+bwd ms", "kept (lse)", "T x T probs");
  for (std::int64_t t : o.seq_lens) {
    const std::int64_t b = std::max<std::int64_t>(1, o.tokens / t);
    const auto qkv = random_floats(b * t * 3 * c, 1);
    const auto dout = random_floats(b * t * c, 2);
    std::vector<float> out(static_cast<std::size_t>(b * t * c)), lse(static_cast<std::size_t>(b * nh * t));
    std::vector<float> dqkv(qkv.size()), delta(lse.size());
    const double fwd_ms =
        time_ms(o.min_seconds, [&] { k.attention_forward(out.data(), lse.data(), qkv.data(), b, t, c, nh, nullptr); });
    const double bwd_ms = time_ms(o.min_seconds, [&] {
      k.attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(), lse.data(), b, t, c, nh,
                           nullptr);
    });
    const double fwd_flops =
        2.0 * static_cast<double>(b * nh) * static_cast<double>(t) * static_cast<double>(t) * static_cast<double>(hs);
    std::printf("%6lld %4lld %11.3f %11.1f %11.3f %11.1f %11.3f %13s %16s\n", static_cast<long long>(t),
                static_cast<long long>(b), fwd_ms, fwd_flops / fwd_ms * 1e-6, bwd_ms, 2.0 * fwd_flops / bwd_ms * 1e-6,
                fwd_ms + bwd_ms, megabytes(4.0 * static_cast<double>(lse.size())).c_str(),
                megabytes(4.0 * static_cast<double>(b * nh) * static_cast<double>(t) * static_cast<double>(t)).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attention: %s\n", e.what());
    return 1;
  }
}
