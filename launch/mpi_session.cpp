// MpiSession: MPI_Init_thread / MPI_Finalize around a program.
#include "tessera/launch/mpi_session.hpp"

#include <mpi.h>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {

MpiSession::MpiSession(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;  // checked by MpiCommunicator's constructor
  MPI_Init_thread(&argc, &argv, kRequiredMpiThreadLevel, &provided);
  owns_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace tessera
