// FailureAgreement: a non-blocking barrier polled for a grace period, then the messages gathered.
#include "tessera/launch/failure_agreement.hpp"

#include <algorithm>
#include <thread>

#include "tessera/comm/node_layout.hpp"

namespace tessera {

FailureAgreement::FailureAgreement() {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
}

FailureAgreement::~FailureAgreement() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

std::optional<std::vector<std::string>> FailureAgreement::all_failed(const std::string& message,
                                                                     std::chrono::milliseconds grace) {
  if (comm_ == MPI_COMM_NULL) return std::nullopt;
  MPI_Request arrived = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm_, &arrived);
  const auto give_up = std::chrono::steady_clock::now() + grace;
  int done = 0;
  while (MPI_Test(&arrived, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
    if (std::chrono::steady_clock::now() >= give_up) return std::nullopt;  // the request is left: the job ends
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!done) return std::nullopt;
  int size = 1;
  MPI_Comm_size(comm_, &size);
  const int length = static_cast<int>(message.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_);
  std::vector<int> offsets(lengths.size(), 0);
  for (std::size_t r = 1; r < lengths.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<std::size_t>(offsets.back() + lengths.back()), '\0');
  MPI_Allgatherv(message.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm_);
  std::vector<std::string> messages;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    messages.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return messages;
}

std::vector<std::string> grouped_failures(const std::vector<std::string>& messages) {
  std::vector<std::string> distinct;
  for (const std::string& m : messages) {
    if (std::find(distinct.begin(), distinct.end(), m) == distinct.end()) distinct.push_back(m);
  }
  if (distinct.size() == 1) {
    return {distinct.front() + " (every one of the " + std::to_string(messages.size()) + " ranks)"};
  }
  std::vector<std::string> lines;
  for (const std::string& m : distinct) {
    std::vector<int> ranks;
    for (std::size_t r = 0; r < messages.size(); ++r) {
      if (messages[r] == m) ranks.push_back(static_cast<int>(r));
    }
    lines.push_back((ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) + ": " + m);
  }
  return lines;
}

}  // namespace tessera
