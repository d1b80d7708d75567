// FirstExchange: a collective's first messages, tagged with the call's digest; a peer's message with
// another tag is drained, and the ranks then name their calls to each other.
#include "tessera/comm/mpi/call_check.hpp"

#include <climits>
#include <stdexcept>
#include <utility>

#include "tessera/comm/mpi/mpi_check.hpp"
#include "tessera/comm/mpi/request_poll.hpp"
#include "tessera/core/splitmix64.hpp"

namespace tessera::detail {
namespace {

// A matching first exchange completes within a few polls; only one that lasts longer looks for
// messages of another call, and then only every few polls (a probe costs about as much as a poll).
constexpr int kFirstProbePoll = 32;
constexpr int kProbeEveryPolls = 8;

int byte_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw std::logic_error("FirstExchange: a first message of more than INT_MAX bytes");
  }
  return static_cast<int>(bytes);
}

}  // namespace

int max_tag(MPI_Comm comm) {
  int* value = nullptr;
  int found = 0;
  TESSERA_MPI_CHECK(MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found));
  // The standard guarantees at least 32767.
  return found && value != nullptr && *value >= 32767 ? *value : 32767;
}

int call_tag(const CollectiveCall& call, int tag_ub) {
  // Odd multipliers are bijections of 64-bit words, so calls that differ in one field differ before
  // the final mix, which spreads every bit over the digest.
  const std::uint64_t fields = static_cast<std::uint64_t>(static_cast<std::uint32_t>(call.root)) << 32 |
                               static_cast<std::uint64_t>(call.kind) << 16 |
                               static_cast<std::uint64_t>(call.dtype) << 8 | static_cast<std::uint64_t>(call.op);
  const std::uint64_t h = mix64(call.sequence * 0x9E3779B97F4A7C15ULL ^ call.count * 0xC2B2AE3D27D4EB4FULL ^ fields);
  return 1 + static_cast<int>(h % static_cast<std::uint64_t>(tag_ub));
}

FirstExchange::FirstExchange(MPI_Comm comm, int rank, int size, int tag_ub, std::string communicator_name,
                             LiveMpiCounters& counters, const int& spin_polls)
    : comm_(comm),
      rank_(rank),
      size_(size),
      tag_ub_(tag_ub),
      name_(std::move(communicator_name)),
      counters_(counters),
      spin_polls_(spin_polls),
      drain_buffers_(static_cast<std::size_t>(size)) {
  const auto peers = static_cast<std::size_t>(size > 1 ? size - 1 : 0);
  receives_.reserve(peers);
  receive_peers_.reserve(peers);
  drained_.reserve(peers);
  drains_.reserve(peers);
  sends_.reserve(peers);
}

void FirstExchange::begin(const CollectiveCall& call) {
  call_ = call;
  tag_ = call_tag(call, tag_ub_);
  receives_.clear();
  receive_peers_.clear();
  drained_.clear();
  drains_.clear();
  sends_.clear();
}

void FirstExchange::post_recv(int peer, void* data, std::size_t bytes) {
  receives_.emplace_back();
  receive_peers_.push_back(peer);
  drained_.push_back(0);
  TESSERA_MPI_CHECK(MPI_Irecv(data, byte_count(bytes), MPI_BYTE, peer, tag_, comm_, &receives_.back()));
}

void FirstExchange::post_send(int peer, const void* data, std::size_t bytes) {
  sends_.emplace_back();
  TESSERA_MPI_CHECK(MPI_Isend(data, byte_count(bytes), MPI_BYTE, peer, tag_, comm_, &sends_.back()));
  LiveMpiCounters::bump(counters_.messages_sent);
}

void FirstExchange::finish() {
  bool other_call = false;
  for (PollBackoff backoff(spin_polls_);; backoff.pause()) {
    int done = 0;
    TESSERA_MPI_CHECK(MPI_Testall(static_cast<int>(receives_.size()), receives_.data(), &done, MPI_STATUSES_IGNORE));
    if (done) break;
    const int polls = backoff.polls();
    if (polls >= kFirstProbePoll && polls % kProbeEveryPolls == 0) other_call = drain_other_calls() || other_call;
  }
  if (other_call) {
    wait_all(drains_, spin_polls_);
    complete_sends();  // each peer received or drained this rank's first message
    throw_naming_calls();
  }
}

void FirstExchange::complete_sends() { wait_all(sends_, spin_polls_); }

bool FirstExchange::drain_other_calls() {
  bool drained = false;
  for (std::size_t i = 0; i < receives_.size(); ++i) {
    MPI_Request& receive = receives_[i];
    const int p = receive_peers_[i];
    if (drained_[i] || receive == MPI_REQUEST_NULL) continue;
    int found = 0;
    MPI_Status status;
    TESSERA_MPI_CHECK(MPI_Iprobe(p, MPI_ANY_TAG, comm_, &found, &status));
    if (!found || status.MPI_TAG == tag_) continue;
    // Peer p's next message carries another tag. Unless the receive from p has just completed
    // (its message arrived before that one), p's first message of this call is that message: p made
    // another call.
    int completed = 0;
    TESSERA_MPI_CHECK(MPI_Test(&receive, &completed, MPI_STATUS_IGNORE));
    if (completed) continue;
    MPI_Message message = MPI_MESSAGE_NULL;
    TESSERA_MPI_CHECK(MPI_Improbe(p, MPI_ANY_TAG, comm_, &found, &message, &status));
    if (!found) continue;
    if (status.MPI_TAG == tag_) {
      throw std::logic_error("FirstExchange: a message of this call from rank " + std::to_string(p) +
                             " did not match the receive posted for it");
    }
    int bytes = 0;
    TESSERA_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &bytes));
    // Drained in full (never truncated) so p's send completes; the bytes are dropped.
    std::vector<std::byte>& buffer = drain_buffers_[p];
    buffer.resize(static_cast<std::size_t>(bytes));
    drains_.emplace_back();
    TESSERA_MPI_CHECK(MPI_Imrecv(buffer.data(), bytes, MPI_BYTE, &message, &drains_.back()));
    TESSERA_MPI_CHECK(MPI_Cancel(&receive));  // nothing of this call will come from p
    drained_[i] = 1;
    drained = true;
  }
  return drained;
}

void FirstExchange::throw_naming_calls() {
  calls_.assign(static_cast<std::size_t>(size_), call_);
  std::vector<MPI_Request> requests;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    requests.emplace_back();
    TESSERA_MPI_CHECK(
        MPI_Irecv(&calls_[p], sizeof(CollectiveCall), MPI_BYTE, p, kTagNameCalls, comm_, &requests.back()));
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    requests.emplace_back();
    TESSERA_MPI_CHECK(MPI_Isend(&call_, sizeof(CollectiveCall), MPI_BYTE, p, kTagNameCalls, comm_, &requests.back()));
    LiveMpiCounters::bump(counters_.messages_sent);
  }
  wait_all(requests, spin_polls_);
  LiveMpiCounters::bump(counters_.call_exchanges);
  std::string message = find_collective_mismatch(calls_, name_);
  if (message.empty()) {
    message = "collective mismatch on communicator '" + name_ + "': rank " + std::to_string(rank_) + " called " +
              describe(call_) + " and a peer's message carried another call, yet every rank reports this call";
  }
  throw CollectiveMismatchError(message);
}

void FirstExchange::exchange_calls(const CollectiveCall& call) {
  begin(call);
  if (size_ == 1) return;
  calls_.assign(static_cast<std::size_t>(size_), call_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    post_recv(p, &calls_[p], sizeof(CollectiveCall));
    post_send(p, &call_, sizeof(CollectiveCall));
  }
  finish();
  complete_sends();
  LiveMpiCounters::bump(counters_.call_exchanges);
  // Equal tags of different calls (a digest collision): every rank received every call, so every
  // rank finds the same difference here.
  for (const CollectiveCall& theirs : calls_) {
    if (theirs != call_) throw CollectiveMismatchError(find_collective_mismatch(calls_, name_));
  }
}

}  // namespace tessera::detail
