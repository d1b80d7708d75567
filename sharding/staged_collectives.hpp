// Collectives on small host buffers (a loss, per-rank norms, a unit's master shard) over a
// communicator of any memory space: the MPI world and the planner's loopback communicators use the
// host buffers as they are; an NCCL communicator (GPU memory) gets them staged through memory of
// `device` — one copy in, the collective, one copy out. So the engine, the Trainer and the
// validation loss exchange host values over whatever communicator the engine runs on.
//
// Every function is collective and blocking: every rank of `comm` calls it at the same point with
// the same counts and dtype. `device` is the engine's (its memory space must be the
// communicator's when that is kGpu).
#pragma once

#include "tessera/comm/communicator.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera {

// In place on host memory: host (count) of every rank reduced with `op`.
void all_reduce_host(Device& device, Communicator& comm, Span host, DType dtype, ReduceOp op);

// host_out (host_in.count * size) on every rank: rank r's host_in at [r * count, (r + 1) * count).
void all_gather_host(Device& device, Communicator& comm, ConstSpan host_in, Span host_out, DType dtype);

// One double per rank, all-gathered bit for bit and added on the host left to right in rank order
// starting from 0.0 — the same bits on every rank, whatever the transport (host_collectives.hpp's
// sum_in_rank_order, for any communicator).
double sum_in_rank_order(Device& device, Communicator& comm, double local);

}  // namespace tessera
