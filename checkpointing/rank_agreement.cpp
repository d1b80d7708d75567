// All-gather of each rank's error kind (or -1), then a broadcast of the lowest failing rank's message.
#include "tessera/checkpointing/rank_agreement.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/comm/host_collectives.hpp"

namespace tessera {

void agree_on_success(Communicator& comm, const std::optional<CheckpointError>& local) {
  const int n = comm.size();
  const std::int32_t mine = local ? static_cast<std::int32_t>(local->kind()) : -1;
  const std::vector<std::int32_t> kinds = all_gather_values(comm, mine);
  int first = -1, failed = 0;
  for (int r = 0; r < n; ++r) {
    if (kinds[static_cast<std::size_t>(r)] < 0) continue;
    ++failed;
    if (first < 0) first = r;
  }
  if (first < 0) return;
  std::string message =
      broadcast_string(comm, comm.rank() == first ? std::string(local->what()) : std::string(), first);
  if (n > 1) {
    message = "rank " + std::to_string(first) + ": " + message;
    if (failed > 1) message += " (" + std::to_string(failed - 1) + " other rank(s) failed too)";
  }
  throw CheckpointError(static_cast<CheckpointErrorKind>(kinds[static_cast<std::size_t>(first)]), message);
}

void run_and_agree(Communicator& comm, const std::function<void()>& body) {
  std::optional<CheckpointError> error;
  try {
    body();
  } catch (const CheckpointError& e) {
    error = e;
  } catch (const std::exception& e) {
    error = CheckpointError(CheckpointErrorKind::kIo, e.what());
  }
  agree_on_success(comm, error);
}

}  // namespace tessera
