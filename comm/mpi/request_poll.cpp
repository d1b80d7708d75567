// PollBackoff and wait_all: spin, then yield, then sleep briefly.
#include "tessera/comm/mpi/request_poll.hpp"

#include <chrono>
#include <thread>

#include "tessera/comm/mpi/mpi_check.hpp"

namespace tessera::detail {

void PollBackoff::pause() {
  ++polls_;
  if (polls_ < spin_polls_) return;
  if (polls_ < spin_polls_ + 1024) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void wait_all(std::vector<MPI_Request>& requests, int spin_polls) {
  if (requests.empty()) return;
  for (PollBackoff backoff(spin_polls);; backoff.pause()) {
    int done = 0;
    TESSERA_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) break;
  }
  requests.clear();
}

}  // namespace tessera::detail
