// make_nccl_communicator: the one entry to the GPU backend that compiles in every build. With CUDA
// it builds an NcclCommunicator (comm/nccl/); without, it says how to get one.
#pragma once

#include <memory>

#include "comm/communicator.hpp"

namespace tessera {

// True when this build has the NCCL backend.
bool nccl_backend_built();

// Collective over `bootstrap` (a host-memory communicator, e.g. DistributedContext::world()): an
// NCCL communicator over the same ranks on GPU `device_index` (RankInfo::device_index), whose
// collectives follow and are awaited on `compute_stream` (a cudaStream_t; nullptr = the default
// stream). Throws std::runtime_error when this build has no NCCL backend.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index,
                                                     void* compute_stream, const CommOptions& options);

}  // namespace tessera
