// bench_checkpoint: sharded HDF5 checkpoints of a GPT with >= 1 GiB of optimizer state (f32 master
// + Adam m, v), saved and loaded by 1, 2 and 4 ranks (sub-groups of one mpirun job), next to the
// disk's sequential write and read throughput measured in the same run (one process, 64 MiB
// writes + fsync; reads of the checkpoint's own files, one stream per core, after dropping them from
// the page cache). Also the training-visible
// stall of an async save (the copy to host buffers) against the synchronous save time. Ranks outside
// a row wait without spinning, so a row of n ranks has the machine's cores to itself.
// Usage: mpirun -np 4 bench_checkpoint [--dir /tmp/tessera_bench_checkpoint] [--reps 3]
//        [--layers 7] [--dim 1024] [--threads 0] [--ranks 1,2,4] [--keep]
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "flags/program_options.hpp"
#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"
#include "tessera/checkpointing/training_checkpointer.hpp"
#include "tessera/comm/host_collectives.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/sharding/sharded_engine.hpp"

namespace fs = std::filesystem;

namespace tessera {
namespace {

using benchmarks::median;

using Clock = std::chrono::steady_clock;

struct Args {
  std::string dir = "/tmp/tessera_bench_checkpoint";
  int reps = 3, threads = 0;
  bool keep = false;  // keep the written checkpoints (for inspection with tessera_ckpt / h5dump)
  std::int64_t layers = 7, dim = 1024;
  std::vector<int> ranks{1, 2, 4};
};

// Throws std::invalid_argument naming the flag; returns false after printing --help.
bool parse(int argc, char** argv, Args& a) {
  std::string ranks = "1,2,4";
  po::options_description options("Options");
  // clang-format off
  options.add_options()
      ("dir", value_with_default(&a.dir), "directory the checkpoints are written to (removed after)")
      ("reps", value_with_default(&a.reps), "saves and loads per rank count (medians reported)")
      ("layers", value_with_default(&a.layers), "transformer blocks of the GPT")
      ("dim", value_with_default(&a.dim), "channels of the GPT")
      ("threads", value_with_default(&a.threads), "CPU threads per rank (0: cores / ranks)")
      ("ranks", value_with_default(&ranks), "comma-separated rank counts (sub-groups of the job)")
      ("keep", po::bool_switch(&a.keep), "keep the written checkpoints");
  // clang-format on
  ProgramOptions program("bench_checkpoint",
                         "bench_checkpoint: sharded checkpoint save and load beside the disk's own speed\n"
                         "Usage: mpirun -np 4 bench_checkpoint [options]");
  program.add(options);
  if (!program.parse(argc, argv)) return false;
  // The program's own checks, located in a --config file when it set the value.
  program.locate_errors([&] {
    a.ranks.clear();
    std::stringstream in(ranks);
    for (std::string item; std::getline(in, item, ',');) {
      const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos && item.size() < 6;
      if (!digits || std::stoi(item) < 1) {
        throw std::invalid_argument("--ranks '" + ranks + "': '" + item + "' is not a rank count >= 1");
      }
      a.ranks.push_back(std::stoi(item));
    }
    if (a.ranks.empty()) throw std::invalid_argument("--ranks '" + ranks + "': name at least one rank count");
    if (a.reps < 1) throw std::invalid_argument("--reps " + std::to_string(a.reps) + ": must be >= 1");
    if (a.layers < 1 || a.dim < 16 || a.dim % 16 != 0) {
      throw std::invalid_argument("--layers " + std::to_string(a.layers) + " --dim " + std::to_string(a.dim) +
                                  ": use layers >= 1 and a dim that is a multiple of 16 (16 heads)");
    }
    if (a.threads < 0) throw std::invalid_argument("--threads " + std::to_string(a.threads) + ": must be >= 0");
  });
  return true;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Drops a file's (clean) pages from the page cache, so the next read comes from the disk.
void drop_cache(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void drop_cache_dir(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) drop_cache(e.path());
  }
}

struct DiskSpeed {
  double write_gbs = 0, read_gbs = 0;
};

// One process writes `bytes` sequentially (64 MiB writes, fsync) to the new file `file` (the read rate
// is measured on the checkpoint's own files, read_files_gbs). The file is left in place: deleting it here would make the next fsync pay
// for the file system's discard of its blocks (ext4 -o discard), i.e. slow down what is measured next.
DiskSpeed measure_disk(const fs::path& file, std::int64_t bytes) {
  constexpr std::size_t kBlock = std::size_t{64} << 20;
  std::vector<char> block(kBlock);
  for (std::size_t i = 0; i < kBlock; ++i) block[i] = static_cast<char>(i * 131 + 7);
  DiskSpeed best;
  {
    const auto t0 = Clock::now();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (std::int64_t done = 0; done < bytes;) {
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(kBlock, bytes - done));
      if (::write(fd, block.data(), n) != static_cast<ssize_t>(n)) throw std::runtime_error("disk probe write failed");
      done += static_cast<std::int64_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
    best.write_gbs = std::max(best.write_gbs, static_cast<double>(bytes) / seconds_since(t0) / 1e9);
    drop_cache(file);
  }
  return best;
}

// One process reads every file under `dir` after dropping them from the page cache, in `streams`
// threads, each a contiguous share of the files' bytes in 64 MiB preads (the loader reads with every
// core of a rank too): the disk's read rate for exactly the bytes a load reads, in the state the disk
// holds them.
double read_files_gbs(const fs::path& dir, int streams) {
  drop_cache_dir(dir);
  struct File {
    fs::path path;
    std::int64_t offset = 0, bytes = 0;  // offset: where the file starts in all files' bytes
  };
  std::vector<File> files;
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const auto bytes = static_cast<std::int64_t>(e.file_size(ec));
    files.push_back({e.path(), total, bytes});
    total += bytes;
  }
  constexpr std::int64_t kBlock = std::int64_t{64} << 20;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < streams; ++t) {
    threads.emplace_back([&, t] {
      std::vector<char> block(static_cast<std::size_t>(kBlock));
      const std::int64_t lo = total * t / streams, hi = total * (t + 1) / streams;
      for (const File& f : files) {
        const std::int64_t from = std::max(lo, f.offset), to = std::min(hi, f.offset + f.bytes);
        if (from >= to) continue;
        const int fd = ::open(f.path.c_str(), O_RDONLY);
        if (fd < 0) continue;
        ::posix_fadvise(fd, from - f.offset, to - from, POSIX_FADV_SEQUENTIAL);
        for (std::int64_t at = from; at < to;) {
          const ssize_t n = ::pread(fd, block.data(), static_cast<std::size_t>(std::min(kBlock, to - at)),
                                    static_cast<off_t>(at - f.offset));
          if (n <= 0) break;
          at += n;
        }
        ::close(fd);
      }
    });
  }
  for (auto& th : threads) th.join();
  return static_cast<double>(total) / seconds_since(t0) / 1e9;
}

// MPI_Barrier over every rank, waited for without spinning: the ranks outside a row sleep here while
// the row runs, instead of taking cores from it (Open MPI's barrier polls at full speed).
void idle_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::unique_ptr<Communicator> first_ranks(int ranks) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < ranks ? 0 : MPI_UNDEFINED, rank, &sub);
  if (sub == MPI_COMM_NULL) return nullptr;
  auto comm = std::make_unique<MpiCommunicator>(sub);
  MPI_Comm_free(&sub);
  return comm;
}

double max_over(Communicator& comm, double x) {
  float v = static_cast<float>(x);
  comm.all_reduce(Span(&v, 1), DType::kF32, ReduceOp::kMax).wait();
  return v;
}

double sum_over(Communicator& comm, double x) {
  float v = static_cast<float>(x);
  comm.all_reduce(Span(&v, 1), DType::kF32, ReduceOp::kSum).wait();
  return v;
}

struct Row {
  int ranks = 0;
  double state_gib = 0, disk_write = 0, disk_read = 0;
  double save_s = 0, save_gbs = 0, save_ratio = 0, load_s = 0, load_gbs = 0, load_ratio = 0;
  double stall_s = 0, async_total_s = 0, host_mib = 0;
};

// Saves and loads with `comm`'s ranks; every rank of `comm` calls it.
Row bench_ranks(Communicator& comm, const Args& args, const GptConfig& gpt) {
  auto device = make_device(DeviceChoice::kCpu);
  Gpt model(gpt);
  ShardingConfig config;
  config.stage = ZeroStage::kStage3;
  ShardedEngine engine(model, *device, comm, config, 1234);
  // Optimizer state that is not zeros (as after training), so bytes and checksums are realistic: each
  // state tensor after the master holds a scaled copy of the master.
  for (const auto& unit : engine.units()) {
    std::vector<float> x(static_cast<std::size_t>(unit->optimizer_range().count));
    const auto n = static_cast<std::int64_t>(x.size());
    unit->read_state(0, 0, n, x.data());
    for (std::size_t k = 1; k < unit->state().size(); ++k) {
      for (float& v : x) v *= 0.01f;
      unit->write_state(k, 0, n, x.data());
    }
  }
  Row row;
  row.ranks = comm.size();
  const fs::path base = fs::path(args.dir) / ("ranks" + std::to_string(comm.size()));
  RunConfig run;
  add_gpt_config(run, gpt);
  TrainingProgress progress;

  std::int64_t state_bytes = 0, per_element = 0;
  for (const StateSpec& spec : engine.state_specs()) per_element += static_cast<std::int64_t>(dtype_size(spec.dtype));
  for (const auto& unit : engine.units()) state_bytes += per_element * unit->layout().padded_numel();
  row.state_gib = static_cast<double>(state_bytes) / (1 << 30);
  if (comm.rank() == 0) {
    fs::remove_all(base);
    fs::create_directories(base);
    ::sync();
  }
  // Each repetition: the disk probe, then a synchronous save into a new run directory, then a load
  // of it from the disk (page cache dropped). This disk's speed drifts (bursts, then throttling),
  // so every save and load is compared with the probe taken right before it; medians are reported.
  std::vector<double> disk_w, disk_r, save_s, save_gbs, load_s, load_gbs, save_ratio, load_ratio;
  for (int r = 0; r < args.reps; ++r) {
    DiskSpeed probe;
    if (comm.rank() == 0) probe = measure_disk(base / ("disk_probe" + std::to_string(r) + ".bin"), state_bytes);
    probe = broadcast_value(comm, probe, 0);
    comm.barrier().wait();
    auto t0 = Clock::now();
    progress.step = r + 1;
    const fs::path run_dir = base / ("sync" + std::to_string(r));
    const SaveResult saved = save_checkpoint(engine, comm, run_dir, progress, run);
    double t = max_over(comm, seconds_since(t0));
    const double written = sum_over(comm, static_cast<double>(saved.bytes_written));
    // The read probe: the checkpoint's own files, read raw by one process before and after the load
    // (the disk's speed drifts; a file just written may still sit in a cache below the page cache,
    // which a probe of another file would not see).
    const int probe_streams = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    double raw_before = 0, raw_after = 0;
    if (comm.rank() == 0) raw_before = read_files_gbs(saved.path, probe_streams);
    comm.barrier().wait();
    drop_cache_dir(saved.path);
    comm.barrier().wait();
    t0 = Clock::now();
    const LoadResult loaded = load_checkpoint(engine, comm, saved.path, run);
    const double tl = max_over(comm, seconds_since(t0));
    const double read = sum_over(comm, static_cast<double>(loaded.bytes_read));
    if (comm.rank() == 0) raw_after = read_files_gbs(saved.path, probe_streams);
    probe.read_gbs = 0.5 * (raw_before + raw_after);
    if (comm.rank() == 0) {
      disk_w.push_back(probe.write_gbs);
      disk_r.push_back(probe.read_gbs);
      save_s.push_back(t);
      save_gbs.push_back(written / t / 1e9);
      save_ratio.push_back(written / t / 1e9 / probe.write_gbs);
      load_s.push_back(tl);
      load_gbs.push_back(read / tl / 1e9);
      load_ratio.push_back(read / tl / 1e9 / probe.read_gbs);
    }
    comm.barrier().wait();
  }
  row.disk_write = median(disk_w);
  row.disk_read = median(disk_r);
  row.save_s = median(save_s);
  row.save_gbs = median(save_gbs);
  row.save_ratio = median(save_ratio);
  row.load_s = median(load_s);
  row.load_gbs = median(load_gbs);
  row.load_ratio = median(load_ratio);
  // Async saves: what the training loop waits for, and the whole save in the background.
  {
    CheckpointOptions options;
    options.dir = (base / "async").string();
    options.mode = SaveMode::kAsync;
    options.handle_signals = false;
    options.existing = ExistingCheckpoints::kOverwrite;  // a kept directory of an earlier bench run
    TrainingCheckpointer checkpointer(options, engine, comm, run);
    row.host_mib = static_cast<double>(device->memory().current(MemoryCategory::kCommBuffers)) / (1 << 20);
    std::vector<double> stalls, totals;
    for (int r = 0; r < args.reps; ++r) {
      comm.barrier().wait();
      const auto t0 = Clock::now();
      progress.step = 100 + r;
      checkpointer.save(progress);  // the training loop is blocked only for this call
      stalls.push_back(max_over(comm, checkpointer.last_stall_seconds()));
      checkpointer.finish();
      totals.push_back(max_over(comm, seconds_since(t0)));
    }
    row.stall_s = median(stalls);
    row.async_total_s = median(totals);
  }
  comm.barrier().wait();
  if (comm.rank() == 0 && !args.keep) {
    fs::remove_all(base);
    ::sync();  // the file system discards the freed blocks now, not during the next row's timings
  }
  comm.barrier().wait();
  return row;
}

int bench(DistributedContext& ctx, const Args& args) {
  const int world = ctx.world_size();
  const GptConfig gpt{8192, 64, args.layers, 16, args.dim};
  std::vector<Row> rows;
  for (int n : args.ranks) {
    if (n > world) continue;
    set_cpu_threads(args.threads > 0 ? args.threads
                                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / n));
    if (auto comm = first_ranks(n)) {
      const Row row = bench_ranks(*comm, args, gpt);
      if (comm->rank() == 0) rows.push_back(row);
    }
    idle_barrier(MPI_COMM_WORLD);
  }
  if (ctx.rank() != 0) return 0;
  std::printf(
      "bench_checkpoint: GPT %s, ZeRO-3, f32 master + Adam m, v; chunks checksummed with %s; dir %s; medians of %d "
      "repetitions\n",
      gpt.to_string().c_str(), chunk_checksum_name(ShardWriteOptions{}.checksum), args.dir.c_str(), args.reps);
  std::printf(
      "disk write = one process, sequential 64 MiB writes + fsync of as many bytes as the state, right before "
      "every save; disk read = one process reading the saved checkpoint's files in one sequential stream per core "
      "(64 MiB reads, page cache dropped), the mean of a read right before and one right after every load; save / disk and "
      "load / disk are the medians of the per-repetition ratios\n\n");
  std::printf(
      "| ranks | state GiB | disk write GB/s | save s | save GB/s | save / disk | disk read GB/s | load s | "
      "load GB/s | load / disk | async stall s | stall / save | async total s | host buffers MiB/rank |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf(
        "| %d | %.2f | %.2f | %.2f | %.2f | %.0f%% | %.2f | %.2f | %.2f | %.0f%% | %.3f | %.1f%% | %.2f | %.0f |\n",
        r.ranks, r.state_gib, r.disk_write, r.save_s, r.save_gbs, 100 * r.save_ratio, r.disk_read, r.load_s, r.load_gbs,
        100 * r.load_ratio, r.stall_s, 100 * r.stall_s / r.save_s, r.async_total_s, r.host_mib);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::Args args;
  try {
    if (!tessera::parse(argc, argv, args)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
    return 1;
  }
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv,
                                  [&](tessera::DistributedContext& ctx) { return tessera::bench(ctx, args); });
}
