// nccl_rendezvous: how ranks agree on an NCCL unique id — rank 0 creates it and broadcasts it over
// a host-memory bootstrap communicator (the MPI world). Kept apart from the NCCL communicator,
// which only consumes the id.
#pragma once

#include <nccl.h>

#include "tessera/comm/communicator.hpp"

namespace tessera {

// Collective over `bootstrap`, which must work on host memory (MemorySpace::kHost).
ncclUniqueId nccl_rendezvous(Communicator& bootstrap);

}  // namespace tessera
