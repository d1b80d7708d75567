// Polling MPI requests to completion. MPI_Waitall busy-spins a core for the whole transfer; the
// progress thread shares the machine with the compute threads it overlaps, so after a short spin it
// yields, and after a longer one it sleeps briefly between polls (each poll also drives MPI's
// progress). A caller blocked in Work::wait() that runs its collective itself has nothing else to
// do: it spins as long as a blocking MPI call would for a transfer (about a millisecond) before it
// yields too.
#pragma once

#include <mpi.h>

#include <vector>

namespace tessera::detail {

// Polls spun before yielding (a poll takes roughly 0.1 µs).
inline constexpr int kSpinPollsBesideCompute = 64;
inline constexpr int kSpinPollsWhileBlocked = 1 << 14;

// What a polling loop does between two polls.
class PollBackoff {
 public:
  explicit PollBackoff(int spin_polls) : spin_polls_(spin_polls) {}
  void pause();
  int polls() const { return polls_; }

 private:
  int spin_polls_;
  int polls_ = 0;
};

// Polls until every request has completed, then clears the list. Throws (TESSERA_MPI_CHECK) when
// MPI reports an error.
void wait_all(std::vector<MPI_Request>& requests, int spin_polls);

}  // namespace tessera::detail
