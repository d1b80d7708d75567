// CollectiveCall: what one rank asked a communicator to do (sequence number, collective, count,
// dtype, op, root), in a fixed trivially-copyable layout so ranks can exchange it as bytes and
// compare: debug mode (CollectiveCheck::kMatchCalls) of the NCCL backend all-gathers it before
// every collective; the MPI backend carries a digest of it in its message tags
// (comm/mpi/call_check.hpp) and swaps the calls themselves only to name them after a mismatch.
// The watchdog names the call a rank waits in with describe().
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "tessera/comm/reduce_op.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kBarrier,
  kSplit,
  kAllReduceF32,      // dtype: the wire dtype
  kReduceScatterF32,  // dtype: the wire dtype
};

const char* collective_name(CollectiveKind kind);  // "all_reduce", "reduce_scatter", ...

struct CollectiveCall {
  std::uint64_t sequence = 0;  // 1 for the first collective on a communicator, then 2, 3, ...
  std::uint64_t count = 0;     // all_reduce(_f32), broadcast: buffer count; reduce_scatter(_f32):
                               // out.count (per rank); all_gather: in.count (per rank); barrier,
                               // split: 0
  std::int32_t root = -1;      // broadcast only
  CollectiveKind kind = CollectiveKind::kBarrier;
  DType dtype = DType::kF32;     // the _f32 collectives: the wire dtype; ignored (kept kF32) by
                                 // barrier and split
  ReduceOp op = ReduceOp::kSum;  // ignored (kept kSum) by all but the reducing collectives
  std::uint8_t padding = 0;

  bool operator==(const CollectiveCall&) const = default;
};

// Builds a call with the fields its collective does not use left at their defaults, so two
// matching calls compare equal.
CollectiveCall make_collective_call(CollectiveKind kind, std::uint64_t sequence, std::uint64_t count, DType dtype,
                                    ReduceOp op, int root);

// "#5 all_reduce(count=1024, bf16, sum)", "#6 broadcast(count=8, f32, root=0)", "#7 barrier()",
// "#8 reduce_scatter_f32(count=512, wire bf16, avg)".
std::string describe(const CollectiveCall& call);

// Thrown on every rank when the ranks are found to have called different collectives.
class CollectiveMismatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// calls[r] is what rank r called. Returns "" when all calls are equal, else a message naming, for
// each rank whose call differs from rank 0's, both calls and what differs ("different counts"; at
// most a few ranks are listed).
std::string find_collective_mismatch(std::span<const CollectiveCall> calls, const std::string& communicator_name);

}  // namespace tessera
