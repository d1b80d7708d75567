// All-gather of (kind, length) per rank, then a broadcast of the lowest failing rank's message.
#include "checkpointing/rank_agreement.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera {

void agree_on_success(Communicator& comm, const std::optional<CheckpointError>& local) {
  const int n = comm.size();
  std::int32_t mine[2] = {local ? static_cast<std::int32_t>(local->kind()) : -1,
                          local ? static_cast<std::int32_t>(std::strlen(local->what())) : 0};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(n));
  comm.all_gather(ConstSpan(mine, 2), Span(all.data(), all.size()), DType::kI32).wait();
  int first = -1, failed = 0;
  for (int r = 0; r < n; ++r) {
    if (all[2 * r] < 0) continue;
    ++failed;
    if (first < 0) first = r;
  }
  if (first < 0) return;
  const auto length = static_cast<std::size_t>(all[2 * first + 1]);
  std::vector<std::int32_t> words((length + 3) / 4 + 1, 0);
  if (comm.rank() == first) std::memcpy(words.data(), local->what(), length);
  comm.broadcast(Span(words.data(), words.size()), DType::kI32, first).wait();
  std::string message(reinterpret_cast<const char*>(words.data()), length);
  if (n > 1) {
    message = "rank " + std::to_string(first) + ": " + message;
    if (failed > 1) message += " (" + std::to_string(failed - 1) + " other rank(s) failed too)";
  }
  throw CheckpointError(static_cast<CheckpointErrorKind>(all[2 * first]), message);
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
