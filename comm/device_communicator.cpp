// make_nccl_communicator: the NCCL backend when this build has it (TESSERA_HAVE_CUDA), else a
// message. The choice is made once, here, at file level.
#include "comm/device_communicator.hpp"

#include <stdexcept>

#if defined(TESSERA_HAVE_CUDA)
#include "comm/nccl/nccl_communicator.hpp"
#include "comm/nccl/nccl_rendezvous.hpp"
#endif

namespace tessera {

#if defined(TESSERA_HAVE_CUDA)

bool nccl_backend_built() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index,
                                                     void* compute_stream, const CommOptions& options) {
  const ncclUniqueId id = nccl_rendezvous(bootstrap);
  return std::make_unique<NcclCommunicator>(id, bootstrap.rank(), bootstrap.size(), device_index,
                                            static_cast<cudaStream_t>(compute_stream), options);
}

#else

bool nccl_backend_built() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int, void*, const CommOptions&) {
  throw std::runtime_error("this Tessera build has no NCCL backend: configure with CUDA available "
                           "(-DTESSERA_CUDA=AUTO or ON, nvcc and NCCL installed) to use GPU "
                           "communicators, or use the MPI communicator on host memory");
}

#endif

}  // namespace tessera
