// abort_job: print, then MPI_Abort (or std::abort without MPI).
#include "tessera/comm/job_abort.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

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
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();
}

}  // namespace tessera
