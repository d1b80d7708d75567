// bench_comm: time, algorithm bandwidth and bus bandwidth (nccl-tests definitions) of the MPI
// communicator's all_reduce, reduce_scatter and all_gather in f32 and bf16, each beside the same
// operation through MPI's own collective on f32 (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather) measured in the same run, plus memcpy bandwidth as the machine's ceiling.
//
//   mpirun -np 4 bench_comm [--min-mib 1] [--max-mib 256] [--factor 4] [--iters 0 (auto)]
//                           [--segment-kib 2048] [--shared-memory-kib 4096] (the communicator's defaults)
//                           [--inputs fresh|constant]
//   e.g. 64 KiB to 4 MiB:  mpirun -np 2 bench_comm --min-mib 0.0625 --max-mib 4 --factor 2
//
// Sizes are f32 buffer sizes (the bf16 rows move the same element count in half the bytes):
// all_reduce: the buffer; reduce_scatter: the input (count * ranks); all_gather: the output.
// time = the median over timed calls (after warm-up) of the slowest rank's time per call, in µs.
// The calls of one row's three variants (MPI, Tessera f32, Tessera bf16) alternate, in an order
// that rotates, so a machine whose load changes during the run slows all three alike and no variant
// always inherits the caches of the same predecessor. "vs MPI" = MPI's time / Tessera's.
// algbw = size / time; busbw = algbw * 2(n-1)/n for all_reduce, algbw * (n-1)/n otherwise.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "flags/program_options.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/precision/float_bits.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"

namespace {

namespace po = boost::program_options;
using tessera::Communicator;
using tessera::DType;
using tessera::ReduceOp;

struct Settings {
  double min_mib = 1;
  double max_mib = 256;
  int factor = 4;
  int iters = 0;  // 0: by size
  std::size_t segment_kib = tessera::MpiTuning{}.segment_bytes / 1024;
  std::size_t shared_memory_kib = tessera::MpiTuning{}.shared_memory_bytes / 1024;
  std::string inputs = "fresh";
};

// nullopt: --help was printed.
std::optional<Settings> parse(int argc, char** argv, bool print_help) {
  Settings s;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("min-mib", tessera::value_with_default(&s.min_mib), "smallest f32 buffer, MiB")
      ("max-mib", tessera::value_with_default(&s.max_mib), "largest f32 buffer, MiB")
      ("factor", tessera::value_with_default(&s.factor), "size ratio between rows (>= 2)")
      ("iters", tessera::value_with_default(&s.iters), "timed calls per row (0: by size, 10 to 200)")
      ("segment-kib", tessera::value_with_default(&s.segment_kib), "the MPI backend's pipeline segment, KiB")
      ("shared-memory-kib", tessera::value_with_default(&s.shared_memory_kib),
       "collectives up to this size run through shared memory on one node, KiB (0: messages only)")
      ("inputs", tessera::value_with_default(&s.inputs),
       "fresh: each rank rewrites a call's input before it (untimed), as training does; constant: never, "
       "so a peer's input may still be in the reader's cache from the last call");
  // clang-format on
  tessera::ProgramOptions program("bench_comm",
                                  "bench_comm: the MPI communicator's collectives beside MPI's own\n"
                                  "Usage: mpirun -np 4 bench_comm [options]");
  program.add(options);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  if (s.factor < 2 || s.min_mib <= 0 || s.max_mib < s.min_mib) {
    throw std::invalid_argument("bench_comm: need --factor >= 2 and 0 < --min-mib <= --max-mib");
  }
  if (s.inputs != "fresh" && s.inputs != "constant") {
    throw std::invalid_argument("bench_comm: --inputs must be fresh or constant, got '" + s.inputs + "'");
  }
  return s;
}

// One collective to time, and what runs before each call of it, untimed: with --inputs fresh the
// rank rewrites the buffer the call reads, as a training step rewrites its gradients and shards
// before they are reduced or gathered.
struct TimedOp {
  std::function<void()> call;
  std::function<void()> prepare;
};

// Seconds per call of each op: every one of `iters` rounds (after `warmup`) calls the ops in turn,
// each after its prepare and a barrier, and counts each call as long as its slowest rank; the median
// over rounds is returned per op (robust to a noisy machine). The order rotates from round to round,
// so each op follows each other op equally often: what the previous call left in the caches (the
// same buffer warm, or evicted by another buffer) favours no op.
std::vector<double> time_ops(int warmup, int iters, const std::vector<TimedOp>& ops) {
  for (int i = 0; i < warmup; ++i) {
    for (const auto& op : ops) op.call();
  }
  const std::size_t n_ops = ops.size();
  std::vector<double> mine(static_cast<std::size_t>(iters) * n_ops), slowest(mine.size());
  for (int i = 0; i < iters; ++i) {
    for (std::size_t turn = 0; turn < n_ops; ++turn) {
      const std::size_t k = (static_cast<std::size_t>(i) + turn) % n_ops;
      if (ops[k].prepare) ops[k].prepare();
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      ops[k].call();
      mine[static_cast<std::size_t>(i) * n_ops + k] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::vector<double> medians;
  for (std::size_t k = 0; k < n_ops; ++k) {
    std::vector<double> times;
    for (int i = 0; i < iters; ++i) times.push_back(slowest[static_cast<std::size_t>(i) * n_ops + k]);
    std::sort(times.begin(), times.end());
    medians.push_back(times[times.size() / 2]);
  }
  return medians;
}

double time_op(int warmup, int iters, const std::function<void()>& op) {
  return time_ops(warmup, iters, {{op, {}}})[0];
}

struct Buffers {
  std::vector<float> in_f32, out_f32;
  std::vector<std::uint16_t> in_bf16, out_bf16;
};

void print_row(int rank, const char* collective, const char* dtype, std::size_t elements, std::size_t bytes,
               double seconds, double bus_factor, double mpi_seconds, std::size_t mpi_bytes) {
  if (rank != 0) return;
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double mpi_algbw = static_cast<double>(mpi_bytes) / mpi_seconds / 1e9;
  std::printf("%-15s %-5s %11zu %9.4f %10.1f %7.2f %7.2f | %10.1f %7.2f %7.2f | %6.2fx\n", collective, dtype, elements,
              static_cast<double>(bytes) / (1 << 20), seconds * 1e6, algbw, algbw * bus_factor, mpi_seconds * 1e6,
              mpi_algbw, mpi_algbw * bus_factor, mpi_seconds / seconds);
}

double memcpy_gbps(std::size_t bytes, bool all_ranks, int rank) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  const bool active = all_ranks || rank == 0;
  const double seconds = time_op(1, 5, [&] {
    if (active) std::memcpy(b.data(), a.data(), bytes);
  });
  return static_cast<double>(bytes) / seconds / 1e9;
}

int run(tessera::DistributedContext& ctx) {
  const std::optional<Settings> parsed = parse(ctx.argc(), ctx.argv(), ctx.rank() == 0);
  if (!parsed) return 0;
  const Settings& s = *parsed;
  tessera::MpiTuning tuning(s.segment_kib * 1024);
  tuning.shared_memory_bytes = s.shared_memory_kib * 1024;
  tessera::MpiCommunicator comm(MPI_COMM_WORLD, ctx.comm_options(), tuning);
  const int n = comm.size();
  const int rank = comm.rank();
  const double ring = static_cast<double>(n - 1) / n;
  const std::size_t max_bytes = static_cast<std::size_t>(s.max_mib * (1 << 20));

  if (rank == 0) {
    std::printf("# bench_comm: %d ranks on %d node(s), MPI backend (direct reduce-scatter, segment %zu KiB)\n", n,
                ctx.rank_info().num_nodes, s.segment_kib);
    if (comm.shared_memory_slot_bytes() > 0) {
      std::printf("# shared memory: collectives of up to %zu KiB (larger ones: messages)\n",
                  comm.shared_memory_slot_bytes() / 1024);
    } else {
      std::printf("# shared memory: off (%s)\n",
                  s.shared_memory_kib == 0 ? "--shared-memory-kib 0" : "ranks on several nodes, or none to be had");
    }
    std::printf("# inputs: %s\n",
                s.inputs == "fresh" ? "rewritten by their rank before every call (untimed)" : "constant");
    std::printf(
        "# time = median over calls of the slowest rank's time per call; bandwidths in GB/s (1e9 B/s), nccl-tests "
        "definitions\n");
    std::printf("# MPI f32 = MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather on the same element count\n");
  }
  const double copy_one = memcpy_gbps(max_bytes, false, rank);
  const double copy_all = memcpy_gbps(max_bytes, true, rank);
  if (rank == 0) {
    std::printf("# memcpy %.0f MiB: %.2f GB/s one rank alone, %.2f GB/s per rank with all %d copying\n", s.max_mib,
                copy_one, copy_all, n);
    std::printf("%-15s %-5s %11s %9s %10s %7s %7s | %10s %7s %7s | %7s\n", "collective", "dtype", "elements", "MiB",
                "time_us", "algbw", "busbw", "MPI_us", "algbw", "busbw", "vs MPI");
  }

  // Buffers of the largest size, allocated once and touched a few times before any timing (fresh
  // pages are slow on some machines), then used by prefix for the smaller sizes.
  Buffers b;
  const std::size_t max_total = max_bytes / sizeof(float);
  b.in_f32.assign(max_total, 1.0f);
  b.out_f32.assign(max_total, 0.0f);
  b.in_bf16.assign(max_total, tessera::f32_to_bf16(1.0f));
  b.out_bf16.assign(max_total, 0);
  for (int pass = 0; pass < 3; ++pass) {
    std::fill(b.out_f32.begin(), b.out_f32.end(), 0.0f);
    std::fill(b.out_bf16.begin(), b.out_bf16.end(), 0);
  }
  for (double mib = s.min_mib; mib <= s.max_mib * 1.0001; mib *= s.factor) {
    const std::size_t bytes = static_cast<std::size_t>(mib * (1 << 20));
    const std::size_t per_rank = bytes / sizeof(float) / static_cast<std::size_t>(n);
    const std::size_t total = per_rank * static_cast<std::size_t>(n);
    const tessera::Span all_f32(b.out_f32.data(), total);
    const tessera::Span all_bf16(b.out_bf16.data(), total);
    const tessera::ConstSpan in_f32(b.in_f32.data(), total);
    const tessera::ConstSpan in_bf16(b.in_bf16.data(), total);
    const int iters = s.iters > 0 ? s.iters : static_cast<int>(std::clamp(512.0 / mib, 10.0, 200.0));
    const int warmup = 2;
    const std::size_t f32_bytes = total * 4;
    const std::size_t bf16_bytes = total * 2;

    // all_reduce (in place; zeros keep the buffer constant across iterations)
    std::fill_n(b.out_f32.begin(), total, 0.0f);
    std::fill_n(b.out_bf16.begin(), total, 0);
    const auto mpi_all_reduce = [&] {
      MPI_Allreduce(MPI_IN_PLACE, b.out_f32.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    const auto all_reduce_f32 = [&] { comm.all_reduce(all_f32, DType::kF32, ReduceOp::kSum).wait(); };
    const auto all_reduce_bf16 = [&] { comm.all_reduce(all_bf16, DType::kBF16, ReduceOp::kSum).wait(); };
    const bool fresh = s.inputs == "fresh";
    // What a call reads, rewritten with the values it already holds (the rows' values stay constant).
    const auto rewrite = [fresh]<class T>(T* data, std::size_t count, T value) -> std::function<void()> {
      if (!fresh) return {};
      return [data, count, value] { std::fill_n(data, count, value); };
    };
    const std::uint16_t bf16_one = tessera::f32_to_bf16(1.0f);
    const std::vector<double> ar = time_ops(warmup, iters,
                                            {{mpi_all_reduce, rewrite(b.out_f32.data(), total, 0.0f)},
                                             {all_reduce_f32, rewrite(b.out_f32.data(), total, 0.0f)},
                                             {all_reduce_bf16, rewrite(b.out_bf16.data(), total, std::uint16_t{0})}});
    const double mpi_ar = ar[0], ar_f32 = ar[1], ar_bf16 = ar[2];
    print_row(rank, "all_reduce", "f32", total, f32_bytes, ar_f32, 2 * ring, mpi_ar, f32_bytes);
    print_row(rank, "all_reduce", "bf16", total, bf16_bytes, ar_bf16, 2 * ring, mpi_ar, f32_bytes);

    // reduce_scatter: input total, output per_rank
    const auto mpi_reduce_scatter = [&] {
      MPI_Reduce_scatter_block(b.in_f32.data(), b.out_f32.data(), static_cast<int>(per_rank), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
    };
    const auto reduce_scatter_f32 = [&] {
      comm.reduce_scatter(in_f32, tessera::Span(b.out_f32.data(), per_rank), DType::kF32, ReduceOp::kSum).wait();
    };
    const auto reduce_scatter_bf16 = [&] {
      comm.reduce_scatter(in_bf16, tessera::Span(b.out_bf16.data(), per_rank), DType::kBF16, ReduceOp::kSum).wait();
    };
    const std::vector<double> rs = time_ops(warmup, iters,
                                            {{mpi_reduce_scatter, rewrite(b.in_f32.data(), total, 1.0f)},
                                             {reduce_scatter_f32, rewrite(b.in_f32.data(), total, 1.0f)},
                                             {reduce_scatter_bf16, rewrite(b.in_bf16.data(), total, bf16_one)}});
    const double mpi_rs = rs[0], rs_f32 = rs[1], rs_bf16 = rs[2];
    print_row(rank, "reduce_scatter", "f32", total, f32_bytes, rs_f32, ring, mpi_rs, f32_bytes);
    print_row(rank, "reduce_scatter", "bf16", total, bf16_bytes, rs_bf16, ring, mpi_rs, f32_bytes);

    // all_gather: input per_rank, output total
    const auto mpi_all_gather = [&] {
      MPI_Allgather(b.in_f32.data(), static_cast<int>(per_rank), MPI_FLOAT, b.out_f32.data(),
                    static_cast<int>(per_rank), MPI_FLOAT, MPI_COMM_WORLD);
    };
    const auto all_gather_f32 = [&] {
      comm.all_gather(tessera::ConstSpan(b.in_f32.data(), per_rank), all_f32, DType::kF32).wait();
    };
    const auto all_gather_bf16 = [&] {
      comm.all_gather(tessera::ConstSpan(b.in_bf16.data(), per_rank), all_bf16, DType::kBF16).wait();
    };
    const std::vector<double> ag = time_ops(warmup, iters,
                                            {{mpi_all_gather, rewrite(b.in_f32.data(), per_rank, 1.0f)},
                                             {all_gather_f32, rewrite(b.in_f32.data(), per_rank, 1.0f)},
                                             {all_gather_bf16, rewrite(b.in_bf16.data(), per_rank, bf16_one)}});
    const double mpi_ag = ag[0], ag_f32 = ag[1], ag_bf16 = ag[2];
    print_row(rank, "all_gather", "f32", total, f32_bytes, ag_f32, ring, mpi_ag, f32_bytes);
    print_row(rank, "all_gather", "bf16", total, bf16_bytes, ag_bf16, ring, mpi_ag, f32_bytes);
    if (rank == 0) std::fflush(stdout);
  }
  const tessera::MpiCounters counters = comm.counters();
  if (rank == 0) {
    std::printf("# rank 0: %llu collectives, %llu run by the waiting thread, %llu call exchanges\n",
                static_cast<unsigned long long>(counters.collectives),
                static_cast<unsigned long long>(counters.run_by_waiter),
                static_cast<unsigned long long>(counters.call_exchanges));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, run);
}
