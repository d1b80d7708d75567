// make_nccl_communicator / make_device_world: the NCCL backend when this build has it
// (TESSERA_HAVE_CUDA), else a message. The choice is made once, here, at file level.
#include "tessera/comm/device_communicator.hpp"

#include <stdexcept>
#include <string>

#include "tessera/runtime/device.hpp"

#if defined(TESSERA_HAVE_CUDA)
#include "tessera/comm/nccl/nccl_communicator.hpp"
#include "tessera/comm/nccl/nccl_rendezvous.hpp"
#include "tessera/runtime/cuda/cuda_device.hpp"
#endif

namespace tessera {
namespace {

constexpr const char* kNoNccl =
    "this Tessera build has no NCCL backend: configure with CUDA available (-DTESSERA_CUDA=AUTO or ON, nvcc and "
    "NCCL installed) to use GPU communicators, or use the MPI communicator on host memory";

}  // namespace

#if defined(TESSERA_HAVE_CUDA)

bool nccl_backend_built() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index, void* compute_stream,
                                                     const CommOptions& options) {
  const ncclUniqueId id = nccl_rendezvous(bootstrap);
  return std::make_unique<NcclCommunicator>(id, bootstrap.rank(), bootstrap.size(), device_index,
                                            static_cast<cudaStream_t>(compute_stream), options);
}

namespace {

std::unique_ptr<Communicator> make_gpu_world(Device& device, Communicator& host_world, const CommOptions& options) {
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (gpu == nullptr) {
    throw std::invalid_argument("make_device_world: device " + device.name() +
                                " holds GPU memory but is not the CUDA device of this build");
  }
  const ncclUniqueId id = nccl_rendezvous(host_world);
  return std::make_unique<NcclCommunicator>(id, host_world.rank(), host_world.size(), gpu->index(),
                                            gpu->cuda_stream(StreamRole::kCompute).handle(), options,
                                            gpu->cuda_stream(StreamRole::kCommunication).handle());
}

}  // namespace

#else

bool nccl_backend_built() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int, void*, const CommOptions&) {
  throw std::runtime_error(kNoNccl);
}

namespace {

std::unique_ptr<Communicator> make_gpu_world(Device&, Communicator&, const CommOptions&) {
  throw std::runtime_error(kNoNccl);
}

}  // namespace

#endif

std::unique_ptr<Communicator> make_device_world(Device& device, Communicator& host_world, const CommOptions& options) {
  if (device.memory_space() != MemorySpace::kGpu) return nullptr;
  if (host_world.memory_space() != MemorySpace::kHost) {
    throw std::invalid_argument("make_device_world: the host world '" + host_world.name() + "' works on " +
                                memory_space_name(host_world.memory_space()) +
                                " memory; pass the host-memory world (MPI) the ranks start from");
  }
  return make_gpu_world(device, host_world, options);
}

}  // namespace tessera
