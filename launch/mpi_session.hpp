// MpiSession: brings MPI up at the thread level the MPI communicator needs (MPI_THREAD_MULTIPLE)
// and takes it down again. Works under mpirun/srun and as a lone process (MPI singleton: world of 1).
// If MPI is already initialised (a test harness, a host program) it is used as is and left running.
#pragma once

namespace tessera {

class MpiSession {
 public:
  // Calls MPI_Init_thread(kRequiredMpiThreadLevel) unless MPI is initialised already. Does not
  // check the level provided: MpiCommunicator's constructor does, with a message.
  MpiSession(int& argc, char**& argv);
  ~MpiSession();  // MPI_Finalize, if this session initialised MPI and nobody finalised it
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owns_ = false;
};

}  // namespace tessera
