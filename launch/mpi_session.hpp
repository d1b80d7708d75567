// MpiSession: brings MPI up at the thread level the MPI communicator needs (MPI_THREAD_MULTIPLE)
// and takes it down again. Works under mpirun/srun and as a lone process (MPI singleton: world of 1).
// If MPI is already initialised (a test harness, a host program) it is used as is and left running.
#pragma once

#include <cstdint>

namespace tessera {

// How the process was started, as far as MPI_Init is concerned.
enum class MpiStart : std::uint8_t {
  kLaunched,  // by mpirun, srun or another launcher (or not known): MPI sets itself up as usual
  kAlone,     // no launcher: a world of one for the whole run, with no peer to reach
};

class MpiSession {
 public:
  // Calls MPI_Init_thread(kRequiredMpiThreadLevel) unless MPI is initialised already. Does not
  // check the level provided: MpiCommunicator's constructor does, with a message.
  // MpiStart::kAlone: Open MPI would load every high-speed network transport to look for peers
  // (libpsm2's set-up alone sleeps about 0.2 s), most of a lone tool's start-up; a process alone
  // needs none, so it asks for the plain point-to-point layer, unless the environment chose one
  // (OMPI_MCA_pml).
  MpiSession(int& argc, char**& argv, MpiStart start = MpiStart::kLaunched);
  ~MpiSession();  // MPI_Finalize, if this session initialised MPI and nobody finalised it
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owns_ = false;
};

}  // namespace tessera
