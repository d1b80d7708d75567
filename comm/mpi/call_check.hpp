// The MPI backend's check that every rank runs the same collective, carried by messages the
// collective sends anyway, so a matching call costs no extra exchange.
//
// Every message of a collective is tagged with call_tag(call): a digest of the collective, count,
// dtype, op, root and sequence number. Receives name that tag, so a message of another call never
// matches one (no peer data lands in a buffer sized for another call, and nothing is truncated).
// Each collective opens with its "first exchange": exactly one message to and one from every peer
// (empty where a chunk is) — the first segment of the data for reduce-scatter, all-gather and
// all-reduce; the call itself for broadcast, barrier and split. A rank posts no other send of the
// collective before its first exchange has completed, so a peer that made another call has sent
// this rank exactly one message of that call. When the first exchange does not complete, the rank
// probes its peers: a message from peer p with another tag while the receive from p is still open
// means p made another call. The rank then receives (drains) that message, so p's send completes,
// and cancels its own receive. As calls that are not all equal always leave every rank with at
// least one peer whose call differs, every rank detects the mismatch, finishes its first exchange
// that way, and then all ranks swap their CollectiveCall (tag kTagNameCalls) to throw
// CollectiveMismatchError naming the ranks and both calls. A rank that never makes a call still
// leaves its peers waiting, which the watchdog ends.
//
// The digest fills the tag range MPI offers (MPI_TAG_UB: 2^31 - 1 with Open MPI, at least 2^15 - 1
// by the standard); two different calls share a tag with probability 1 / MPI_TAG_UB.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/mpi/mpi_counters.hpp"

namespace tessera::detail {

// Kept for naming the calls after a mismatch; call_tag() never returns it.
inline constexpr int kTagNameCalls = 0;

// The largest tag `comm` accepts (MPI_TAG_UB).
int max_tag(MPI_Comm comm);

// The tag of every message of `call`, in [1, tag_ub].
int call_tag(const CollectiveCall& call, int tag_ub);

// One collective's first exchange, reused from call to call (it keeps its buffers).
class FirstExchange {
 public:
  // `spin_polls` (request_poll.hpp) is read at every wait; it outlives this object.
  FirstExchange(MPI_Comm comm, int rank, int size, int tag_ub, std::string communicator_name, LiveMpiCounters& counters,
                const int& spin_polls);

  // Starts the first exchange of `call`; then post exactly one receive from and one send to every
  // peer, and finish().
  void begin(const CollectiveCall& call);
  int tag() const { return tag_; }
  void post_recv(int peer, void* data, std::size_t bytes);
  void post_send(int peer, const void* data, std::size_t bytes);
  // Returns once every message has arrived with this call's tag; the sends may still be under way
  // (complete_sends). When a peer made another call, throws CollectiveMismatchError naming both
  // calls (on every rank).
  void finish();
  // Returns once every send has completed: before its buffer is written to, and before the
  // collective completes. Waiting for a peer to take this rank's data only then lets the rank work
  // on what it received (reduce it) while the peer copies.
  void complete_sends();

  // The first exchange of a collective that moves no data first (broadcast, barrier, split): sends
  // the call itself to every peer and compares what arrives. Once it returns, every rank has made
  // the same call (so it is also a barrier).
  void exchange_calls(const CollectiveCall& call);

 private:
  // Drains, from each peer whose receive is still open, a first message that carries another tag.
  // Returns true when it drained one.
  bool drain_other_calls();
  // Swaps the calls with every peer and throws CollectiveMismatchError describing them.
  [[noreturn]] void throw_naming_calls();

  MPI_Comm comm_;
  int rank_;
  int size_;
  int tag_ub_;
  std::string name_;  // the communicator's, for messages
  LiveMpiCounters& counters_;
  const int& spin_polls_;

  CollectiveCall call_;
  int tag_ = 0;
  // The first exchange's requests, in the order posted (only live ones, so a poll tests no more
  // than it must): receives with their peers, drains (receives of another call's first message),
  // and sends.
  std::vector<MPI_Request> receives_;
  std::vector<int> receive_peers_;
  std::vector<char> drained_;  // by receive: its peer's first message carried another call
  std::vector<MPI_Request> drains_;
  std::vector<MPI_Request> sends_;
  std::vector<std::vector<std::byte>> drain_buffers_;  // by peer
  std::vector<CollectiveCall> calls_;                  // exchange_calls and naming: what each rank called
};

}  // namespace tessera::detail
