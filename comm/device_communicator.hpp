// The communicator a device needs, through the one entry to the GPU backend that compiles in every
// build: an NcclCommunicator (comm/nccl/) where NCCL is built and every rank has a GPU of its own,
// else the host world's collectives staged through pinned host memory (comm/staged/).
//   auto device = make_rank_device(choice, dist.rank_info());           // launch/rank_device.hpp
//   auto gpu_world = make_device_world(*device, dist.world(), dist.comm_options(), DeviceComm::kAuto);
//   Communicator& world = gpu_world ? *gpu_world : dist.world();         // give this to the engine
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "tessera/comm/communicator.hpp"

namespace tessera {

class Device;

// How a GPU's collectives travel: kNccl (one GPU per rank), kMpi (the host world's collectives on
// buffers staged through pinned host memory: ranks may share a GPU, no NCCL needed), kAuto (NCCL
// when this build has it and no two ranks use the same GPU, else MPI).
enum class DeviceComm : std::uint8_t { kAuto, kNccl, kMpi };

const char* device_comm_name(DeviceComm comm);  // "auto", "nccl", "mpi"
// Parses "auto", "nccl" or "mpi"; throws std::invalid_argument naming `what` (e.g. "--comm").
DeviceComm parse_device_comm(std::string_view text, std::string_view what);

// Collective over `host_world` (every rank calls it, with devices of the same memory space): the
// communicator over the same ranks that works on `device`'s memory.
//  - a host or meta device: nullptr — `host_world` itself serves it (MPI on host memory);
//  - a GPU device with NCCL chosen: an NCCL communicator on the device's GPU whose collectives run
//    on the device's communication stream, after the work queued on its compute stream so far, and
//    whose Work::wait() makes the compute stream wait (no host block);
//  - a GPU device with MPI chosen, or a simulated GPU (no NCCL): a StagedCommunicator over
//    `host_world` (which must outlive it).
// The device must outlive the communicator (and every one split from it). Every rank must pass the
// same `comm`. Throws std::runtime_error for kNccl when this build has no NCCL backend or when two
// ranks use the same GPU (naming them and the GPU).
std::unique_ptr<Communicator> make_device_world(Device& device, Communicator& host_world, const CommOptions& options,
                                                DeviceComm comm = DeviceComm::kAuto);

// True when this build has the NCCL backend.
bool nccl_backend_built();

// Collective over `bootstrap` (a host-memory communicator, e.g. DistributedContext::world()): an
// NCCL communicator over the same ranks on GPU `device_index` (RankInfo::device_index), whose
// collectives follow and are awaited on `compute_stream` (a cudaStream_t; nullptr = the default
// stream). Throws std::runtime_error when this build has no NCCL backend.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index, void* compute_stream,
                                                     const CommOptions& options);

}  // namespace tessera
