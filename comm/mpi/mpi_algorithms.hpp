// MpiAlgorithms: the MPI backend's collectives over point-to-point messages on host buffers, run by
// the communicator's progress thread (one call at a time).
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
// Count agreement: before any data moves, every rank sends its (count, dtype) to every peer (16
// bytes each, one message latency) and compares what it receives. Ranks that called the same
// collective with different counts all throw CollectiveMismatchError naming the counts, instead
// of posting receives that do not match the sends (a hang, or a peer's data in a wrong-sized buffer).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "comm/mpi/chunk_layout.hpp"
#include "comm/reduce_op.hpp"
#include "precision/dtype.hpp"

namespace tessera::detail {

class MpiAlgorithms {
 public:
  // `comm` is borrowed; segment_bytes must be the same on every rank.
  MpiAlgorithms(MPI_Comm comm, int rank, int size, std::size_t segment_bytes);

  void all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op);  // (count)
  void reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                      ReduceOp op);  // in (count_per_rank * size), out (count_per_rank)
  void all_gather(const void* in, void* out, std::size_t count_per_rank,
                  DType dtype);  // in (count_per_rank), out (count_per_rank * size)
  void broadcast(void* buf, std::size_t count, DType dtype, int root);
  void barrier();

 private:
  // Rank r reduces chunk r of every rank's `in` into `out` (layout.count[r] elements; `out` may be
  // exactly in + layout.offset[r]).
  void reduce_scatter_phase(const std::byte* in, std::byte* out, const ChunkLayout& layout,
                            DType dtype, ReduceOp op);
  // `mine` (layout.count[r] elements) lands at out + layout.offset[r] on every rank.
  void all_gather_phase(const std::byte* mine, std::byte* out, const ChunkLayout& layout,
                        DType dtype);

  // Exchanges (count, dtype) with every peer; throws CollectiveMismatchError on every rank when any
  // two differ. `collective` names the call in the message.
  void agree_on_count(const char* collective, std::size_t count, DType dtype);

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::size_t segment_bytes_;
  std::vector<std::byte> scratch_;  // receive slots of the reduce-scatter pipeline, kept between calls
};

}  // namespace tessera::detail
