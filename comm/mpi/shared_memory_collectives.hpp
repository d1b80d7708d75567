// SharedMemoryCollectives: the MPI backend's collectives when every rank of the communicator is on
// one node, through a block of memory all of them map (comm/mpi/node_shared_memory.hpp) instead of
// messages. Between 64 KiB and a few MiB a message between two processes costs MPI a rendezvous
// and a kernel copy that walks the sender's pages; here a rank copies into its own part of the
// block and its peers read it there, and ranks wait for each other on a counter in the block.
//
// Each rank's part holds a header (a sequence counter per stage, the call it is making, where its
// data starts) and two data slots used by alternate calls. Call k (its sequence number) of every
// rank:
//   1. writes what its peers need into its slot k % 2 (each call of a slot after the previous one,
//      see claim()) and its CollectiveCall beside it, then sets its "arrived" counter to k;
//   2. waits for every peer's "arrived" to reach k and compares their calls with its own: ranks that
//      made different calls all throw CollectiveMismatchError naming them, before any byte of the
//      caller's buffers is written — the check costs nothing beyond the wait the data needs anyway;
//   3. reads what it needs from its peers' slots.
// all_reduce adds a second stage: rank r reduces chunk r from its own buffer and its peers' slots,
// writes the result into its slot, sets "reduced" to k, and copies the other chunks from their
// owners once every peer's "reduced" has reached k. A slot written for call k was last read during
// call k - 2, which every peer finished before it arrived at call k - 1, which this rank waited for:
// two slots need no third stage.
//
// The values are those of the message-based algorithms bit for bit: the same chunks, reduced by
// the same functions in rank order 0..N-1, the same rounding to the wire dtype. A collective whose
// data does not fit a slot agrees on its call here and moves its data by messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/host_reduce.hpp"
#include "tessera/comm/mpi/encoding.hpp"
#include "tessera/comm/mpi/mpi_counters.hpp"
#include "tessera/comm/mpi/node_shared_memory.hpp"
#include "tessera/comm/reduce_op.hpp"

namespace tessera::detail {

class SharedMemoryCollectives {
 public:
  // `memory` is this communicator's block (rank `rank` of `size`); `spin_polls` is read before each
  // wait (request_poll.hpp); `communicator_name` names it in mismatch messages; `counters` outlives
  // this object.
  SharedMemoryCollectives(std::unique_ptr<NodeSharedMemory> memory, int rank, int size, std::string communicator_name,
                          LiveMpiCounters& counters, const int& spin_polls);

  // The part of the block each rank needs for slots of `slot_bytes`.
  static std::size_t bytes_per_rank(std::size_t slot_bytes);

  // Bytes of one data slot: the most a collective moves this way (in its wire dtype: the whole
  // buffer for all_reduce and reduce_scatter's input, one rank's chunk for all_gather).
  std::size_t slot_bytes() const { return slot_bytes_; }

  // Each returns true when it ran the whole collective, and false when its data does not fit a
  // slot: the ranks have then agreed on the call, and the caller moves the data by messages.
  bool all_reduce(const CollectiveCall& call, std::byte* buf, std::size_t count, Encoding encoding,
                  ReduceOp op);  // buf (count) of encoding.buffer
  bool reduce_scatter(const CollectiveCall& call, const std::byte* in, std::byte* out, std::size_t count_per_rank,
                      Encoding encoding, ReduceOp op);  // in (count_per_rank * size), out (count_per_rank)
  bool all_gather(const CollectiveCall& call, const std::byte* in, std::byte* out, std::size_t count_per_rank,
                  DType dtype);  // in (count_per_rank), out (count_per_rank * size)
  bool broadcast(const CollectiveCall& call, std::byte* buf, std::size_t count, DType dtype, int root);
  // Returns once every rank has made `call` (barrier, split, and the collectives too large for a
  // slot); throws CollectiveMismatchError naming the calls when they differ.
  void agree(const CollectiveCall& call);

 private:
  struct Header;
  Header& header(int rank) const;
  std::byte* slot(int rank, std::uint64_t sequence) const;
  // This rank's data of `call` (`bytes`): in slot sequence % 2, from where that slot's last call
  // ended (from its start when the rest is too short), so consecutive calls write lines their peers
  // have not just read. Rewriting a line a peer holds in its cache costs a round trip to that core
  // per line, several times the copy itself. The offset is published by arrive().
  std::byte* claim(const CollectiveCall& call, std::size_t bytes);
  // Where rank `rank` put its data of call `sequence` (after that rank has arrived).
  const std::byte* region(int rank, std::uint64_t sequence) const;
  // Stage 1's end: `call` beside the data, then the "arrived" counter.
  void arrive(const CollectiveCall& call);
  // Stage 2: every peer has arrived at `call`, with the same call.
  void wait_for_peers(const CollectiveCall& call);
  // Polls until every peer's counter (at `offset` in its header) has reached `sequence`.
  void wait_for_counters(std::size_t offset, std::uint64_t sequence);
  // target (count) = the reduction in rank order of this rank's own values (own_values, in
  // encoding.buffer) and every peer's slot at `wire_offset` bytes (in encoding.wire).
  void reduce_chunk(const std::byte* own_values, std::size_t wire_offset, std::size_t count, std::uint64_t sequence,
                    Encoding encoding, ReduceOp op, std::byte* target);

  std::unique_ptr<NodeSharedMemory> memory_;
  int rank_;
  int size_;
  std::string name_;
  LiveMpiCounters& counters_;
  const int& spin_polls_;
  std::size_t slot_bytes_;
  std::size_t next_offset_[2] = {0, 0};  // per slot: where this rank's next call's data starts
  std::vector<const void*> sources_;
  std::vector<WireSource> wire_sources_;
  std::vector<CollectiveCall> calls_;
};

}  // namespace tessera::detail
