// abort_job: print, then MPI_Abort bounded in time (or std::abort without MPI).
#include "tessera/comm/job_abort.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace tessera {

void abort_job(const std::string& message, int exit_code) noexcept {
  std::fflush(stdout);
  if (!message.empty()) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
  }
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // MPI_Abort asks the launcher to end every rank; a launcher that cannot reach a node (its link
    // is down) may never come back to this process, so it ends itself after a grace period.
    try {
      std::thread([exit_code] {
        std::this_thread::sleep_for(kAbortGrace);
        std::_Exit(exit_code);
      }).detach();
    } catch (...) {
      // No thread: MPI_Abort alone.
    }
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
  std::abort();
}

}  // namespace tessera
