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
// f32 buffers on a narrower wire (all_reduce_f32, reduce_scatter_f32): the same phases, with the
// conversions fused into the pipeline instead of passes over the buffer. A segment is narrowed to
// the wire dtype into a send slot just before it is posted; the owner reduces its own f32 values
// (rounded as they are read) with the peers' wire values straight into the f32 output
// (reduce_wire_in_order); the all-gather phase narrows each segment of the reduced chunk once for
// all peers and widens what arrives into the output. Values are exactly those of the collective in
// the wire dtype, widened.
//
// Count agreement: before any data moves, every rank sends its (count, dtype) to every peer (16
// bytes each, one message latency) and compares what it receives. Ranks that called the same
// collective with different counts all throw CollectiveMismatchError naming the counts, instead
// of posting receives that do not match the sends (a hang, or a peer's data in a wrong-sized buffer).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "tessera/comm/mpi/chunk_layout.hpp"
#include "tessera/comm/reduce_op.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

// The dtype of the caller's buffers and the dtype elements travel in: the same for the plain
// collectives; f32 buffers and a bf16/f16 wire for the _f32 ones.
struct Encoding {
  DType buffer = DType::kF32;
  DType wire = DType::kF32;
  bool converts() const { return buffer != wire; }
};

class MpiAlgorithms {
 public:
  // `comm` is borrowed; segment_bytes must be the same on every rank.
  MpiAlgorithms(MPI_Comm comm, int rank, int size, std::size_t segment_bytes);

  void all_reduce(void* buf, std::size_t count, DType dtype, ReduceOp op);  // (count)
  void reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                      ReduceOp op);  // in (count_per_rank * size), out (count_per_rank)
  void all_gather(const void* in, void* out, std::size_t count_per_rank,
                  DType dtype);  // in (count_per_rank), out (count_per_rank * size)
  void all_reduce_f32(float* buf, std::size_t count, DType wire, ReduceOp op);  // (count) f32
  void reduce_scatter_f32(const float* in, float* out, std::size_t count_per_rank, DType wire,
                          ReduceOp op);  // in (count_per_rank * size) f32, out (count_per_rank) f32
  void broadcast(void* buf, std::size_t count, DType dtype, int root);
  void barrier();

 private:
  // Rank r reduces chunk r of every rank's `in` into `out` (layout.count[r] elements of
  // encoding.buffer; `out` may be exactly in + layout.offset[r]).
  void reduce_scatter_phase(const std::byte* in, std::byte* out, const ChunkLayout& layout, Encoding encoding,
                            ReduceOp op);
  // `mine` (layout.count[r] elements) lands at out + layout.offset[r] on every rank.
  void all_gather_phase(const std::byte* mine, std::byte* out, const ChunkLayout& layout, DType dtype);
  // The same for f32 values that are exactly representable in `wire` (a reduced chunk), sent as
  // `wire` segment by segment; `mine` is exactly out + layout.offset[r].
  void all_gather_phase_narrowed(const float* mine, float* out, const ChunkLayout& layout, DType wire);
  // Grows scratch_ (receive slots) and send_scratch_ (narrowed send slots) to at least these bytes.
  void reserve_scratch(std::size_t receive_bytes, std::size_t send_bytes);

  // Exchanges (count, dtype) with every peer; throws CollectiveMismatchError on every rank when any
  // two differ. `collective` names the call in the message.
  void agree_on_count(const char* collective, std::size_t count, DType dtype);

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::size_t segment_bytes_;
  std::vector<std::byte> scratch_;       // receive slots of the pipelines, kept between calls
  std::vector<std::byte> send_scratch_;  // narrowed send slots (converting collectives only)
};

}  // namespace tessera::detail
