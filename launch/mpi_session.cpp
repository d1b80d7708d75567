// MpiSession: MPI_Init_thread / MPI_Finalize around a program.
#include "tessera/launch/mpi_session.hpp"

#include <mpi.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

// Open MPI settings for a process alone: the point-to-point layer that needs no network probe (its
// self transport is all a world of one uses). Empty for other MPIs. (Not the isolated singleton,
// ess_singleton_isolated: every such process takes the same job name, and two started at once share,
// create and remove one session directory.)
std::vector<std::pair<const char*, const char*>> lone_process_settings() {
#if defined(OPEN_MPI)
  return {{"OMPI_MCA_pml", "ob1"}};
#else
  return {};
#endif
}

// Sets each variable the environment does not set yet; returns those it set.
std::vector<const char*> set_missing(const std::vector<std::pair<const char*, const char*>>& settings) {
  std::vector<const char*> set;
  for (const auto& [name, value] : settings) {
    if (std::getenv(name) != nullptr) continue;
    setenv(name, value, 1);
    set.push_back(name);
  }
  return set;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv, MpiStart start) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // Read by MPI_Init only; removed again so that no program this one starts inherits them.
  const std::vector<const char*> lone =
      start == MpiStart::kAlone ? set_missing(lone_process_settings()) : std::vector<const char*>{};
  int provided = 0;  // checked by MpiCommunicator's constructor
  MPI_Init_thread(&argc, &argv, kRequiredMpiThreadLevel, &provided);
  for (const char* name : lone) unsetenv(name);
  owns_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace tessera
