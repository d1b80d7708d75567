// Warnings and rank notices: the one way any program or library path tells the user something
// went less well than it should, as one line that carries the rank it came from:
//   warn(3, "memory grew by 12 MiB between steps 1 and 9")
//     -> "rank 3: warning: memory grew by 12 MiB between steps 1 and 9"
//   print_rank_notice(1, "offload: replaced /nvme/tessera_rank1.bin (a stale file)")
//     -> "rank 1: offload: replaced /nvme/tessera_rank1.bin (a stale file)"
// Lines go to stderr as one write each. A program that draws something on the terminal (the live
// progress line of training/progress_display.hpp) routes them through a sink for as long as a
// ScopedRankLineSink lives, so that they appear as whole lines above what it draws. Thread-safe:
// lines from several threads are never interleaved.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tessera {

// The rank to print when the caller knows none: the launcher's rank of this process (mpirun's
// OMPI_COMM_WORLD_RANK, srun's SLURM_PROCID, PMIX_RANK, PMI_RANK, in that order), else 0. Code
// that runs before MPI (a re-exec in main) uses it.
constexpr int kLauncherRank = -1;

// "rank R: warning: MESSAGE" (no newline; R resolved as above when rank is kLauncherRank).
std::string warning_line(int rank, std::string_view message);
// Prints warning_line(rank, message).
void warn(int rank, std::string_view message);
// Prints "rank R: MESSAGE": something a rank did that the user should know of, not a problem.
void print_rank_notice(int rank, std::string_view message);

// Receives each line (without its newline) instead of stderr while it is installed.
using RankLineSink = std::function<void(const std::string& line)>;

// Installs `sink` for its lifetime and restores the previous one afterwards (nest in LIFO order).
class ScopedRankLineSink {
 public:
  explicit ScopedRankLineSink(RankLineSink sink);
  ~ScopedRankLineSink();
  ScopedRankLineSink(const ScopedRankLineSink&) = delete;
  ScopedRankLineSink& operator=(const ScopedRankLineSink&) = delete;

 private:
  RankLineSink previous_;
};

}  // namespace tessera
