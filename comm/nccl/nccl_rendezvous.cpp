// nccl_rendezvous: ncclGetUniqueId on rank 0, broadcast as a host value.
#include "tessera/comm/nccl/nccl_rendezvous.hpp"

#include <stdexcept>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/comm/nccl/nccl_check.hpp"

namespace tessera {

ncclUniqueId nccl_rendezvous(Communicator& bootstrap) {
  if (bootstrap.memory_space() != MemorySpace::kHost) {
    throw std::invalid_argument("nccl_rendezvous: the bootstrap communicator '" + bootstrap.name() + "' works on " +
                                memory_space_name(bootstrap.memory_space()) +
                                " memory; pass a host-memory one (the MPI world)");
  }
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) TESSERA_NCCL_CHECK(ncclGetUniqueId(&id));
  return broadcast_value(bootstrap, id, 0);
}

}  // namespace tessera
