// bench_nodes: collectives across nodes -- Tessera's flat communicator (direct algorithm over all
// ranks), its two-level HierarchicalCommunicator (inside the node, then across nodes on shards)
// and Open MPI's own collectives -- each with the bytes that crossed each node's network link per
// call, read from the kernel's interface counters (/proc/net/dev of the rank's network namespace:
// every interface but lo) beside what the algorithm's formula predicts.
//
//   mpirun -np 4 --host n1:2,n2:2 bench_nodes [--sizes-kib 64,1024,16384] [--iters 5]
//
// Sizes are f32 buffer sizes: all_reduce: the buffer; reduce_scatter: the input (count x ranks);
// all_gather: the output. time = median over timed calls of the slowest rank's time per call.
// Link bytes: bytes sent by the node (all its ranks) per call, averaged over the nodes and calls;
// counted by each node's first rank, so ranks of one node must share its network namespace.
// Formulas (N ranks, L per node, M nodes, S bytes): flat all_reduce 2 L (N-L)/N S, reduce_scatter
// and all_gather L (N-L)/N S; hierarchical all_reduce 2 (M-1)/M S, reduce_scatter and all_gather
// (M-1)/M S.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "flags/program_options.hpp"
#include "tessera/comm/hierarchical/hierarchical_communicator.hpp"
#include "tessera/launch/run_distributed.hpp"

namespace {

namespace po = boost::program_options;
using tessera::Communicator;
using tessera::DType;
using tessera::ReduceOp;

struct Settings {
  std::string sizes_kib = "64,1024,16384,65536";
  int iters = 5;
};

std::optional<Settings> parse(int argc, char** argv, bool print_help) {
  Settings s;
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("sizes-kib", tessera::value_with_default(&s.sizes_kib), "f32 buffer sizes, KiB, comma-separated")
      ("iters", tessera::value_with_default(&s.iters), "timed calls per row");
  // clang-format on
  tessera::ProgramOptions program("bench_nodes",
                                  "bench_nodes: flat vs two-level vs Open MPI collectives across nodes\n"
                                  "Usage: mpirun -np 4 --host n1:2,n2:2 bench_nodes [options]");
  program.add(options);
  if (!program.parse(argc, argv, print_help)) return std::nullopt;
  if (s.iters < 1) throw std::invalid_argument("bench_nodes: --iters must be >= 1");
  return s;
}

std::vector<std::size_t> sizes_of(const std::string& text) {
  std::vector<std::size_t> sizes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) sizes.push_back(std::stoull(item) * 1024);
  return sizes;
}

// Bytes this network namespace has sent on every interface but lo.
std::int64_t sent_bytes() {
  std::ifstream dev("/proc/net/dev");
  std::string line;
  std::int64_t total = 0;
  for (int skip = 0; skip < 2 && std::getline(dev, line); ++skip) {
  }
  while (std::getline(dev, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    std::int64_t value = 0;
    for (int field = 0; field < 9; ++field) fields >> value;  // the 9th: bytes sent
    total += value;
  }
  return total;
}

struct Measured {
  double seconds = 0;
  double link_bytes = 0;  // per node per call
};

Measured measure(tessera::DistributedContext& ctx, int iters, const std::function<void()>& op) {
  op();  // warm-up: connections, buffers
  const bool counts = ctx.rank_info().local_rank == 0;
  std::vector<double> mine(static_cast<std::size_t>(iters)), slowest(mine.size());
  MPI_Barrier(MPI_COMM_WORLD);
  const std::int64_t before = counts ? sent_bytes() : 0;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    op();
    mine[static_cast<std::size_t>(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // The barriers' own bytes are a few hundred per call: small beside the collectives measured.
  double sent = counts ? static_cast<double>(sent_bytes() - before) : 0.0, total = 0;
  MPI_Allreduce(mine.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&sent, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  std::sort(slowest.begin(), slowest.end());
  return {slowest[slowest.size() / 2], total / ctx.rank_info().num_nodes / iters};
}

int run(tessera::DistributedContext& ctx) {
  const std::optional<Settings> parsed = parse(ctx.argc(), ctx.argv(), ctx.rank() == 0);
  if (!parsed) return 0;
  const tessera::RankInfo& info = ctx.rank_info();
  const int N = info.world_size, M = info.num_nodes;
  if (M < 2 || !info.nodes.ranks_per_node()) {
    throw std::invalid_argument(
        "bench_nodes: needs ranks on 2 or more nodes, as many on each (this job: " + info.nodes.describe() + ")");
  }
  const int L = *info.nodes.ranks_per_node();
  Communicator& flat = ctx.world();
  tessera::HierarchicalCommunicator two_level(ctx.world(), info.nodes);
  MPI_Comm mpi = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi);
  if (ctx.rank() == 0) {
    std::printf("bench_nodes: %d ranks on %d nodes (%s)\n", N, M, info.nodes.describe().c_str());
    std::printf("%-15s %9s  %-12s %10s %8s %14s %14s\n", "collective", "size", "algorithm", "ms/call", "GB/s",
                "link MB/node", "formula MB");
  }
  const auto row = [&](const char* collective, std::size_t bytes, const char* algorithm, const Measured& m,
                       double formula) {
    if (ctx.rank() != 0) return;
    char expected[32] = "-";
    if (formula >= 0) std::snprintf(expected, sizeof expected, "%.3f", formula / 1e6);
    std::printf("%-15s %6.0f KiB  %-12s %10.3f %8.3f %14.3f %14s\n", collective, static_cast<double>(bytes) / 1024,
                algorithm, m.seconds * 1e3, static_cast<double>(bytes) / m.seconds / 1e9, m.link_bytes / 1e6, expected);
    std::fflush(stdout);
  };
  const double flat_share = static_cast<double>(L) * (N - L) / N, two_level_share = static_cast<double>(M - 1) / M;
  for (const std::size_t bytes : sizes_of(parsed->sizes_kib)) {
    const std::size_t count = bytes / sizeof(float), per_rank = count / static_cast<std::size_t>(N);
    std::vector<float> buf(count, 1.0f), part(per_rank, 1.0f);
    const double S = static_cast<double>(per_rank * N * sizeof(float));
    row("all_reduce", bytes, "flat",
        measure(ctx, parsed->iters, [&] { flat.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait(); }),
        2 * flat_share * S);
    row("all_reduce", bytes, "two-level",
        measure(ctx, parsed->iters, [&] { two_level.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait(); }),
        2 * two_level_share * S);
    row("all_reduce", bytes, "Open MPI",
        measure(ctx, parsed->iters,
                [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, mpi); }),
        -1);
    const tessera::ConstSpan in(buf.data(), per_rank * N);
    row("reduce_scatter", bytes, "flat",
        measure(ctx, parsed->iters, [&] { flat.reduce_scatter(in, part, DType::kF32, ReduceOp::kSum).wait(); }),
        flat_share * S);
    row("reduce_scatter", bytes, "two-level",
        measure(ctx, parsed->iters, [&] { two_level.reduce_scatter(in, part, DType::kF32, ReduceOp::kSum).wait(); }),
        two_level_share * S);
    row("reduce_scatter", bytes, "Open MPI",
        measure(ctx, parsed->iters,
                [&] {
                  MPI_Reduce_scatter_block(buf.data(), part.data(), static_cast<int>(per_rank), MPI_FLOAT, MPI_SUM,
                                           mpi);
                }),
        -1);
    const tessera::Span out(buf.data(), per_rank * N);
    row("all_gather", bytes, "flat",
        measure(ctx, parsed->iters, [&] { flat.all_gather(part, out, DType::kF32).wait(); }), flat_share * S);
    row("all_gather", bytes, "two-level",
        measure(ctx, parsed->iters, [&] { two_level.all_gather(part, out, DType::kF32).wait(); }), two_level_share * S);
    row("all_gather", bytes, "Open MPI",
        measure(ctx, parsed->iters,
                [&] {
                  MPI_Allgather(part.data(), static_cast<int>(per_rank), MPI_FLOAT, buf.data(),
                                static_cast<int>(per_rank), MPI_FLOAT, mpi);
                }),
        -1);
  }
  MPI_Comm_free(&mpi);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tessera::run_distributed(argc, argv, run); }
