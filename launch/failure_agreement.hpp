// FailureAgreement: when a program's body fails on every rank at once -- the same refusal reached
// through a collective decision (a setting every rank checks, a checkpoint directory some node
// cannot see) -- the job should say so once, not print the message from every rank and let each
// rank's MPI_Abort add the launcher's report. A failing rank waits a moment for the others to fail
// too; if they all do, rank 0 prints each distinct message once with the ranks that had it and ends
// the job alone, and the other ranks stay silent.
#pragma once

#include <mpi.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

class FailureAgreement {
 public:
  // Collective over MPI_COMM_WORLD when MPI is up and there is more than one rank (it duplicates
  // the world for its own use); otherwise does nothing.
  FailureAgreement();
  ~FailureAgreement();
  FailureAgreement(const FailureAgreement&) = delete;
  FailureAgreement& operator=(const FailureAgreement&) = delete;

  // This rank failed with `message`. Waits up to `grace` for every rank to fail as well. Returns
  // every rank's message, in rank order, when all did (on every rank); nullopt when some rank did
  // not come within `grace` (it is still working, or waits in a collective for this one).
  std::optional<std::vector<std::string>> all_failed(const std::string& message, std::chrono::milliseconds grace);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Lines saying `messages` (rank order) once each: "<message>" when every rank had the same one
// (then "(every one of the N ranks)" is added), else "ranks 2, 3: <message>" per distinct message.
std::vector<std::string> grouped_failures(const std::vector<std::string>& messages);

}  // namespace tessera
