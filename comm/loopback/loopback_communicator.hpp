// LoopbackCommunicator: rank `rank` of a group of `size` ranks that has no peers, on
// MemorySpace::kMeta. It lets the real sharding engine run on a meta device (a device that tracks
// allocation sizes but holds no data) in one process, so the memory planner measures what the
// engine allocates at any rank count without launching the ranks.
//
// Every collective checks its arguments exactly as the MPI and NCCL backends do (counts against
// size(), avg on integers, overlap of non-null buffers) and returns a completed Work at once,
// without reading or writing any memory: pointers may be null, and the contents of real buffers
// stay as they were. barrier() completes at once. split() is refused — a loopback communicator
// does not know the other ranks' colors; build each group as a LoopbackCommunicator directly.
#pragma once

#include <memory>

#include "tessera/comm/communicator_base.hpp"

namespace tessera {

class LoopbackCommunicator final : public CommunicatorBase {
 public:
  // Throws std::invalid_argument unless size >= 1 and 0 <= rank < size.
  LoopbackCommunicator(int rank, int size, CommOptions options = CommOptions{.name = "loopback"});

  CommBackend backend() const override { return CommBackend::kLoopback; }
  MemorySpace memory_space() const override { return MemorySpace::kMeta; }

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override;
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override;
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override;
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override;
  Work all_gather(ConstSpan in, Span out, DType dtype) override;
  Work broadcast(Span buf, DType dtype, int root) override;
  Work barrier() override;
  // Throws std::logic_error (see above).
  std::unique_ptr<Communicator> split(int color, int key) override;
};

}  // namespace tessera
