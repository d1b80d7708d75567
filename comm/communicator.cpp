// Names of the communicator backends.
#include "tessera/comm/communicator.hpp"

namespace tessera {

const char* comm_backend_name(CommBackend backend) {
  switch (backend) {
    case CommBackend::kMpi: return "mpi";
    case CommBackend::kNccl: return "nccl";
    case CommBackend::kLoopback: return "loopback";
  }
  return "unknown-backend";
}

}  // namespace tessera
