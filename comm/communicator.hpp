// Communicator: collectives over a fixed group of ranks (MPI processes), the only way Tessera's
// upper layers talk to other ranks. Backends: comm/mpi/ (host memory, always built), comm/nccl/
// (GPU memory, built with CUDA) and comm/loopback/ (no memory and no peers: one rank of a group
// that is only pretended, for the memory planner). Communicators are passed explicitly
// (Communicator&); there is no global one. launch/run_distributed builds the world communicator.
//
// Contract for every collective (what every rank must call):
//  * Collective calls are matched by order: all ranks of the communicator must call the same
//    collectives, in the same order, with the same count, dtype, op and root. A mismatch is caught
//    by CollectiveCheck::kMatchCalls (debug mode), and by the MPI backend always (its messages
//    carry a digest of their call); otherwise it hangs until the watchdog aborts.
//  * Every call is asynchronous: it returns a Work at once. Buffers belong to the caller and must
//    stay alive and untouched until the Work has completed. Collectives on one communicator
//    complete in the order they were issued; waiting on their handles in any order is fine.
//  * Calls on one communicator must come from one thread at a time (use split() or another
//    communicator for concurrent streams of collectives).
//  * Errors a caller can cause (wrong counts, i32 with avg) throw std::invalid_argument at the call.
//    Errors while running (mismatch, MPI failure) are rethrown by Work::wait(); afterwards the
//    communicator refuses further collectives, because the ranks can no longer agree on its state.
//
// Determinism (MPI backend): the same inputs give bit-identical outputs, run after run. Each output
// element of all_reduce and reduce_scatter is x_0 + x_1 + ... + x_{N-1} evaluated left to right in
// rank order, in f32 for floating dtypes (bf16/f16 are widened, summed in f32 and rounded once);
// avg then divides that sum by N. So reduce_scatter followed by all_gather produces exactly the
// values all_reduce produces, for every dtype, whatever the counts; all_reduce_f32 and
// reduce_scatter_f32 produce exactly what the same collectives in their wire dtype produce.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/comm/comm_options.hpp"
#include "tessera/comm/reduce_op.hpp"
#include "tessera/comm/span.hpp"
#include "tessera/core/work.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_space.hpp"

namespace tessera {

enum class CommBackend : std::uint8_t { kMpi, kNccl, kLoopback };

const char* comm_backend_name(CommBackend backend);  // "mpi", "nccl", "loopback"

// split(color, key) with this color: the rank joins no group and gets nullptr.
inline constexpr int kNoGroup = -1;

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;  // 0 .. size()-1 within this communicator
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;  // "world", "world/node", ...
  virtual CommBackend backend() const = 0;
  // Where the spans passed to its collectives must point: kHost (MPI), kGpu (NCCL), kMeta
  // (loopback: nowhere; pointers are never read and may be null).
  virtual MemorySpace memory_space() const = 0;

  // In place: buf (count) holds this rank's input and receives the reduction of all ranks' inputs.
  // avg is for floating dtypes; i32 supports sum and max.
  virtual Work all_reduce(Span buf, DType dtype, ReduceOp op) = 0;

  // NCCL semantics: in has out.count * size() elements; rank r receives in out the reduction of
  // elements [r * out.count, (r + 1) * out.count) of every rank's `in`. out.count may be any
  // value (0 included). In place is allowed when out.data == in.data + rank() * out.count elements.
  virtual Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) = 0;

  // all_reduce and reduce_scatter of f32 buffers whose values travel between ranks as `wire` (f32,
  // bf16 or f16): gradients kept in f32 and sent in half the bytes. Each rank's input counts as its
  // values rounded to `wire`; the result is what all_reduce / reduce_scatter in `wire` gives on
  // them (rank order, f32 accumulation, rounded to `wire` once), widened back to f32. So it equals,
  // bit for bit, converting the input to `wire`, the collective in `wire`, and widening the output;
  // and reduce_scatter_f32 followed by all_gather in `wire` (widened) equals all_reduce_f32. The
  // backend converts as it packs messages and unpacks them (MPI), or on its stream (NCCL): no
  // separate conversion pass over the caller's buffers. wire = f32 is the collective in f32.
  // Buffers as all_reduce (buf) and reduce_scatter (in, out; in place allowed), f32 elements.
  virtual Work all_reduce_f32(Span buf, DType wire, ReduceOp op) = 0;
  virtual Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) = 0;

  // NCCL semantics: out has in.count * size() elements; rank r's `in` lands at
  // [r * in.count, (r + 1) * in.count) of every rank's out. In place is allowed when
  // in.data == out.data + rank() * in.count elements.
  virtual Work all_gather(ConstSpan in, Span out, DType dtype) = 0;

  // Copies buf (count) of rank `root` into buf of every other rank.
  virtual Work broadcast(Span buf, DType dtype, int root) = 0;

  // Completes on a rank once every rank has called barrier() (and all earlier collectives here
  // have completed).
  virtual Work barrier() = 0;

  // Collective and blocking: every rank calls it in its place in the call order. Ranks passing the
  // same color >= 0 form a new communicator, ranked by (key, rank here); a rank passing kNoGroup
  // gets nullptr. The new communicator has this one's options and is independent of it (either
  // may be destroyed first).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Switches the debug check for collectives issued from now on. Every rank must switch at the same
  // point in its sequence of calls (the check adds an exchange to each collective).
  virtual void set_collective_check(CollectiveCheck check) = 0;
  virtual CollectiveCheck collective_check() const = 0;
};

}  // namespace tessera
