// The communicator a device needs, through the one entry to the GPU backend that compiles in every
// build. With CUDA it builds an NcclCommunicator (comm/nccl/); without, it says how to get one.
//   auto device = make_rank_device(choice, dist.rank_info());           // launch/rank_device.hpp
//   auto gpu_world = make_device_world(*device, dist.world(), dist.comm_options());
//   Communicator& world = gpu_world ? *gpu_world : dist.world();         // give this to the engine
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"

namespace tessera {

class Device;

// Collective over `host_world` (every rank calls it, with devices of the same memory space): the
// communicator over the same ranks that works on `device`'s memory.
//  - a host or meta device: nullptr — `host_world` itself serves it (MPI on host memory);
//  - the CUDA device: an NCCL communicator on the device's GPU whose collectives run on the
//    device's communication stream, after the work queued on its compute stream so far, and whose
//    Work::wait() makes the compute stream wait (no host block). The device must outlive it (and
//    every communicator split from it).
// Throws std::runtime_error when the device is a GPU and this build has no NCCL backend.
std::unique_ptr<Communicator> make_device_world(Device& device, Communicator& host_world, const CommOptions& options);

// True when this build has the NCCL backend.
bool nccl_backend_built();

// Collective over `bootstrap` (a host-memory communicator, e.g. DistributedContext::world()): an
// NCCL communicator over the same ranks on GPU `device_index` (RankInfo::device_index), whose
// collectives follow and are awaited on `compute_stream` (a cudaStream_t; nullptr = the default
// stream). Throws std::runtime_error when this build has no NCCL backend.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index, void* compute_stream,
                                                     const CommOptions& options);

}  // namespace tessera
