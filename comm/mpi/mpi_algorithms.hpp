// MpiAlgorithms: the MPI backend's collectives over point-to-point messages on host buffers, run for
// the communicator one call at a time (by its progress thread, or by the thread waiting for it).
//
// reduce-scatter phase ("direct"): every rank sends chunk p of its input straight to rank p, so each
// element travels once, in its own dtype (bf16/f16: 2 bytes), and the owner reduces the N
// contributions with reduce_in_order (rank order 0..N-1, f32 accumulation, one rounding). Chunks are
// cut into segments of MpiTuning::segment_bytes; segment k+1 is in flight while segment k is reduced,
// so scratch stays at 2 * (N-1) segments. Bytes sent per rank: (N-1)/N of the buffer, as in a ring.
// all-gather phase: every rank sends its chunk straight to every other rank.
// all_reduce = reduce-scatter phase + all-gather phase over near-equal chunks, so its values are
// bit-identical to reduce_scatter followed by all_gather.
//
// f32 buffers on a narrower wire (all_reduce_f32, reduce_scatter_f32): the same phases, with the
// conversions fused into the pipeline instead of passes over the buffer. A segment is narrowed to
// the wire dtype into a send slot just before it is posted; the owner reduces its own f32 values
// (rounded as they are read) with the peers' wire values straight into the f32 output
// (reduce_wire_in_order); the all-gather phase narrows each segment of the reduced chunk once for
// all peers and widens what arrives into the output. Values are exactly those of the collective in
// the wire dtype, widened.
//
// Call agreement (comm/mpi/call_check.hpp): every message carries the call's digest as its tag, and
// the first segment to and from every peer (the whole chunk for all_gather) is the collective's
// first exchange: nothing else is sent before it has shown that every rank made the same call. So
// ranks that called with different counts, dtypes, ops or collectives all throw
// CollectiveMismatchError naming the calls, at no cost to matching calls. broadcast, barrier and
// split, which move no data of their own first, exchange the call itself.
//
// On one node (comm/mpi/shared_memory_collectives.hpp): every call first meets its peers in shared
// memory, which also compares the calls; a collective whose data fits a slot runs there, a larger
// one then moves its data by the messages above.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/host_reduce.hpp"
#include "tessera/comm/mpi/call_check.hpp"
#include "tessera/comm/mpi/chunk_layout.hpp"
#include "tessera/comm/mpi/encoding.hpp"
#include "tessera/comm/mpi/mpi_counters.hpp"
#include "tessera/comm/mpi/request_poll.hpp"
#include "tessera/comm/mpi/shared_memory_collectives.hpp"
#include "tessera/comm/reduce_op.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

class MpiAlgorithms {
 public:
  // `comm` is borrowed; segment_bytes must be the same on every rank. Collective: with
  // shared_memory_slot_bytes > 0 and every rank on one node, the ranks map a block of shared memory
  // for the collectives that move up to that many bytes (0 on any rank: none; else rank 0's value). `communicator_name`
  // names it in mismatch messages; `counters` outlives this object.
  MpiAlgorithms(MPI_Comm comm, int rank, int size, std::size_t segment_bytes, std::size_t shared_memory_slot_bytes,
                std::string communicator_name, LiveMpiCounters& counters);

  // Whether collectives run through shared memory, and the most bytes one moves that way.
  std::size_t shared_memory_slot_bytes() const { return shared_ ? shared_->slot_bytes() : 0; }

  // Whether the thread that runs the next collectives is a caller blocked waiting for them (it may
  // spin longer) or the progress thread (request_poll.hpp).
  void set_run_by_waiter(bool by_waiter) { spin_polls_ = by_waiter ? kSpinPollsWhileBlocked : kSpinPollsBesideCompute; }

  // `call` is what this rank was asked to do (its count, dtype and op are those passed here).
  void all_reduce(const CollectiveCall& call, void* buf, std::size_t count, DType dtype, ReduceOp op);  // (count)
  void reduce_scatter(const CollectiveCall& call, const void* in, void* out, std::size_t count_per_rank, DType dtype,
                      ReduceOp op);  // in (count_per_rank * size), out (count_per_rank)
  void all_gather(const CollectiveCall& call, const void* in, void* out, std::size_t count_per_rank,
                  DType dtype);  // in (count_per_rank), out (count_per_rank * size)
  void all_reduce_f32(const CollectiveCall& call, float* buf, std::size_t count, DType wire,
                      ReduceOp op);  // (count) f32
  void reduce_scatter_f32(const CollectiveCall& call, const float* in, float* out, std::size_t count_per_rank,
                          DType wire, ReduceOp op);  // in (count_per_rank * size) f32, out (count_per_rank) f32
  void broadcast(const CollectiveCall& call, void* buf, std::size_t count, DType dtype, int root);
  void barrier(const CollectiveCall& call);
  // Returns once every rank has made `call` (for collectives MPI runs itself, such as split).
  void agree_on_call(const CollectiveCall& call);

 private:
  // Starts a collective: its first exchange is that of `call`.
  void begin(const CollectiveCall& call);
  // Rank r reduces chunk r of every rank's `in` into `out` (layout.count(r) elements of
  // encoding.buffer; `out` may be exactly in + layout.offset(r)). Its first segments are the
  // collective's first exchange.
  void reduce_scatter_phase(const std::byte* in, std::byte* out, const ChunkLayout& layout, Encoding encoding,
                            ReduceOp op);
  // `mine` (layout.count(r) elements) lands at out + layout.offset(r) on every rank. `opens`: these
  // are the collective's first messages (all_gather), so they are its first exchange.
  void all_gather_phase(const std::byte* mine, std::byte* out, const ChunkLayout& layout, DType dtype, bool opens);
  // The same for f32 values that are exactly representable in `wire` (a reduced chunk), sent as
  // `wire` segment by segment; `mine` is exactly out + layout.offset(r). Never opens a collective.
  void all_gather_phase_narrowed(const float* mine, float* out, const ChunkLayout& layout, DType wire);
  // Grows scratch_ (receive slots) and send_scratch_ (narrowed send slots) to at least these bytes.
  void reserve_scratch(std::size_t receive_bytes, std::size_t send_bytes);

  // Messages of the current call after its first exchange (tagged first_.tag()), split at the
  // largest size an MPI count can say.
  void post_recv(std::byte* data, std::size_t bytes, int peer, std::vector<MPI_Request>& requests);
  void post_send(const std::byte* data, std::size_t bytes, int peer, std::vector<MPI_Request>& requests);

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::size_t segment_bytes_;
  LiveMpiCounters& counters_;
  int spin_polls_ = kSpinPollsBesideCompute;
  FirstExchange first_;
  // Kept between calls, so a collective allocates nothing once the sizes have been seen.
  std::vector<std::byte> scratch_;       // receive slots of the pipelines
  std::vector<std::byte> send_scratch_;  // narrowed send slots (converting collectives only)
  std::vector<MPI_Request> current_, next_;
  std::vector<const void*> sources_;
  std::vector<WireSource> wire_sources_;
  std::unique_ptr<SharedMemoryCollectives> shared_;  // null: messages only
};

}  // namespace tessera::detail
