// bench_comm: time, algorithm bandwidth and bus bandwidth (nccl-tests definitions) of the MPI
// communicator's all_reduce, reduce_scatter and all_gather in f32 and bf16, each beside the same
// operation through MPI's own collective on f32 (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather) measured in the same run, plus memcpy bandwidth as the machine's ceiling.
//
//   mpirun -np 4 bench_comm [--min-mib 1] [--max-mib 256] [--factor 4] [--iters 0 (auto)]
//                           [--segment-kib 1024]
//
// Sizes are f32 buffer sizes (the bf16 rows move the same element count in half the bytes):
// all_reduce: the buffer; reduce_scatter: the input (count * ranks); all_gather: the output.
// time = the median over timed calls (after warm-up) of the slowest rank's time per call.
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
  std::size_t segment_kib = 1024;
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
      ("iters", tessera::value_with_default(&s.iters), "timed calls per row (0: by size, 5 to 25)")
      ("segment-kib", tessera::value_with_default(&s.segment_kib), "the MPI backend's pipeline segment, KiB");
  // clang-format on
  tessera::ProgramOptions program("bench_comm",
                                  "bench_comm: the MPI communicator's collectives beside MPI's own\n"
                                  "Usage: mpirun -np 4 bench_comm [options]");
  program.add(options);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  if (s.factor < 2 || s.min_mib <= 0 || s.max_mib < s.min_mib) {
    throw std::invalid_argument("bench_comm: need --factor >= 2 and 0 < --min-mib <= --max-mib");
  }
  return s;
}

// Seconds per call: each of `iters` timed calls (after `warmup`) starts after a barrier and counts
// as long as its slowest rank; the median over calls is returned (robust to a noisy machine).
double time_op(int warmup, int iters, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  std::vector<double> mine(static_cast<std::size_t>(iters)), slowest(mine.size());
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    op();
    mine[static_cast<std::size_t>(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  MPI_Allreduce(mine.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::sort(slowest.begin(), slowest.end());
  return slowest[slowest.size() / 2];
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
  std::printf("%-15s %-5s %11zu %9.2f %10.3f %7.2f %7.2f | %10.3f %7.2f %7.2f | %6.2fx\n", collective, dtype, elements,
              static_cast<double>(bytes) / (1 << 20), seconds * 1e3, algbw, algbw * bus_factor, mpi_seconds * 1e3,
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
  tessera::MpiCommunicator comm(MPI_COMM_WORLD, ctx.comm_options(), tessera::MpiTuning{s.segment_kib * 1024});
  const int n = comm.size();
  const int rank = comm.rank();
  const double ring = static_cast<double>(n - 1) / n;
  const std::size_t max_bytes = static_cast<std::size_t>(s.max_mib * (1 << 20));

  if (rank == 0) {
    std::printf("# bench_comm: %d ranks on %d node(s), MPI backend (direct reduce-scatter, segment %zu KiB)\n", n,
                ctx.rank_info().num_nodes, s.segment_kib);
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
                "time_ms", "algbw", "busbw", "MPI_ms", "algbw", "busbw", "vs MPI");
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
    const int iters = s.iters > 0 ? s.iters : static_cast<int>(std::clamp(1024.0 / mib, 5.0, 25.0));
    const int warmup = 2;
    const std::size_t f32_bytes = total * 4;
    const std::size_t bf16_bytes = total * 2;

    // all_reduce (in place; zeros keep the buffer constant across iterations)
    std::fill_n(b.out_f32.begin(), total, 0.0f);
    std::fill_n(b.out_bf16.begin(), total, 0);
    const double mpi_ar = time_op(warmup, iters, [&] {
      MPI_Allreduce(MPI_IN_PLACE, b.out_f32.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    const double ar_f32 = time_op(warmup, iters, [&] { comm.all_reduce(all_f32, DType::kF32, ReduceOp::kSum).wait(); });
    const double ar_bf16 =
        time_op(warmup, iters, [&] { comm.all_reduce(all_bf16, DType::kBF16, ReduceOp::kSum).wait(); });
    print_row(rank, "all_reduce", "f32", total, f32_bytes, ar_f32, 2 * ring, mpi_ar, f32_bytes);
    print_row(rank, "all_reduce", "bf16", total, bf16_bytes, ar_bf16, 2 * ring, mpi_ar, f32_bytes);

    // reduce_scatter: input total, output per_rank
    const double mpi_rs = time_op(warmup, iters, [&] {
      MPI_Reduce_scatter_block(b.in_f32.data(), b.out_f32.data(), static_cast<int>(per_rank), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
    });
    const double rs_f32 = time_op(warmup, iters, [&] {
      comm.reduce_scatter(in_f32, tessera::Span(b.out_f32.data(), per_rank), DType::kF32, ReduceOp::kSum).wait();
    });
    const double rs_bf16 = time_op(warmup, iters, [&] {
      comm.reduce_scatter(in_bf16, tessera::Span(b.out_bf16.data(), per_rank), DType::kBF16, ReduceOp::kSum).wait();
    });
    print_row(rank, "reduce_scatter", "f32", total, f32_bytes, rs_f32, ring, mpi_rs, f32_bytes);
    print_row(rank, "reduce_scatter", "bf16", total, bf16_bytes, rs_bf16, ring, mpi_rs, f32_bytes);

    // all_gather: input per_rank, output total
    const double mpi_ag = time_op(warmup, iters, [&] {
      MPI_Allgather(b.in_f32.data(), static_cast<int>(per_rank), MPI_FLOAT, b.out_f32.data(),
                    static_cast<int>(per_rank), MPI_FLOAT, MPI_COMM_WORLD);
    });
    const double ag_f32 = time_op(warmup, iters, [&] {
      comm.all_gather(tessera::ConstSpan(b.in_f32.data(), per_rank), all_f32, DType::kF32).wait();
    });
    const double ag_bf16 = time_op(warmup, iters, [&] {
      comm.all_gather(tessera::ConstSpan(b.in_bf16.data(), per_rank), all_bf16, DType::kBF16).wait();
    });
    print_row(rank, "all_gather", "f32", total, f32_bytes, ag_f32, ring, mpi_ag, f32_bytes);
    print_row(rank, "all_gather", "bf16", total, bf16_bytes, ag_bf16, ring, mpi_ag, f32_bytes);
    if (rank == 0) std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, run);
}
