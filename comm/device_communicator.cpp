// make_nccl_communicator / make_device_world: the NCCL backend when this build has it
// (TESSERA_HAVE_NCCL), the staged MPI collectives otherwise or when asked, and the GPU's place in
// the machine (TESSERA_HAVE_CUDA) to tell ranks that share one. The choice is made here, at file level.
#include "tessera/comm/device_communicator.hpp"

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/comm/staged/staged_communicator.hpp"
#include "tessera/runtime/device.hpp"

#if defined(TESSERA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "tessera/runtime/cuda/cuda_device.hpp"
#endif
#if defined(TESSERA_HAVE_NCCL)
#include "tessera/comm/nccl/nccl_communicator.hpp"
#include "tessera/comm/nccl/nccl_rendezvous.hpp"
#endif

namespace tessera {
namespace {

#if defined(TESSERA_HAVE_CUDA)
constexpr const char* kNoNccl =
    "this Tessera build has no NCCL backend: CMake did not find NCCL when it configured the CUDA backend; install "
    "NCCL (or point TESSERA_NCCL_LIBRARY and TESSERA_NCCL_INCLUDE_DIR, or NCCL_HOME, at it) and configure again, "
    "or choose the mpi device comm (collectives staged through host memory)";
#else
constexpr const char* kNoNccl =
    "this Tessera build has no NCCL backend: configure with CUDA available (-DTESSERA_CUDA=AUTO or ON, nvcc and "
    "NCCL installed) to use GPU communicators, or use the MPI communicator on host memory";
#endif

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// "host/0000:3b:00.0 (cuda:0 (NVIDIA H200))": the same for every rank that uses this GPU, whatever
// CUDA_VISIBLE_DEVICES numbers it.
std::string gpu_place(Device& device) {
  std::string bus = device.name();
#if defined(TESSERA_HAVE_CUDA)
  if (auto* gpu = dynamic_cast<CudaDevice*>(&device)) {
    char id[64] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, gpu->index()) == cudaSuccess) bus = id;
  }
#endif
  return host_name() + "/" + bus;
}

// The lowest two ranks of `world` that use the same GPU, as "ranks 0 and 1 use the same GPU (<place>)",
// or "" when every rank has its own. Collective.
std::string shared_gpu(Device& device, Communicator& world) {
  const std::string place = gpu_place(device);
  const std::vector<std::uint64_t> places =
      all_gather_values<std::uint64_t>(world, std::hash<std::string>{}(place));
  for (std::size_t a = 0; a < places.size(); ++a) {
    for (std::size_t b = a + 1; b < places.size(); ++b) {
      if (places[a] == places[b]) {
        const bool mine = static_cast<int>(a) == world.rank() || static_cast<int>(b) == world.rank();
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " use the same GPU" +
               (mine ? " (" + place + ")" : "");
      }
    }
  }
  return "";
}

}  // namespace

const char* device_comm_name(DeviceComm comm) {
  switch (comm) {
    case DeviceComm::kAuto: return "auto";
    case DeviceComm::kNccl: return "nccl";
    case DeviceComm::kMpi: return "mpi";
  }
  return "unknown";
}

DeviceComm parse_device_comm(std::string_view text, std::string_view what) {
  for (DeviceComm comm : {DeviceComm::kAuto, DeviceComm::kNccl, DeviceComm::kMpi}) {
    if (text == device_comm_name(comm)) return comm;
  }
  throw std::invalid_argument(std::string(what) + " " + std::string(text) +
                              ": use auto (NCCL where every rank has a GPU of its own), nccl or mpi (collectives "
                              "staged through host memory)");
}

#if defined(TESSERA_HAVE_NCCL)

bool nccl_backend_built() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index, void* compute_stream,
                                                     const CommOptions& options) {
  const ncclUniqueId id = nccl_rendezvous(bootstrap);
  return std::make_unique<NcclCommunicator>(id, bootstrap.rank(), bootstrap.size(), device_index,
                                            static_cast<cudaStream_t>(compute_stream), options);
}

namespace {

std::unique_ptr<Communicator> make_nccl_world(Device& device, Communicator& host_world, const CommOptions& options) {
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (gpu == nullptr) {
    throw std::invalid_argument("make_device_world: device " + device.name() +
                                " holds GPU memory but is not the CUDA device of this build");
  }
  const ncclUniqueId id = nccl_rendezvous(host_world);
  return std::make_unique<NcclCommunicator>(id, host_world.rank(), host_world.size(), gpu->index(),
                                            gpu->cuda_stream(StreamRole::kCompute).handle(), options,
                                            gpu->cuda_stream(StreamRole::kCommunication).handle(), gpu);
}

}  // namespace

#else

bool nccl_backend_built() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int, void*, const CommOptions&) {
  throw std::runtime_error(kNoNccl);
}

namespace {

std::unique_ptr<Communicator> make_nccl_world(Device&, Communicator&, const CommOptions&) {
  throw std::runtime_error(kNoNccl);
}

}  // namespace

#endif

std::unique_ptr<Communicator> make_device_world(Device& device, Communicator& host_world, const CommOptions& options,
                                                DeviceComm comm) {
  if (device.memory_space() != MemorySpace::kGpu) return nullptr;
  if (host_world.memory_space() != MemorySpace::kHost) {
    throw std::invalid_argument("make_device_world: the host world '" + host_world.name() + "' works on " +
                                memory_space_name(host_world.memory_space()) +
                                " memory; pass the host-memory world (MPI) the ranks start from");
  }
  if (comm == DeviceComm::kMpi) return std::make_unique<StagedCommunicator>(device, host_world);
  if (device.kind() != DeviceKind::kCuda) {
    // A simulated GPU has no NCCL: its collectives are staged through host memory whatever was asked.
    if (comm == DeviceComm::kNccl) {
      throw std::runtime_error("device comm nccl: " + device.name() + " is not a CUDA device; choose mpi or auto");
    }
    return std::make_unique<StagedCommunicator>(device, host_world);
  }
  const std::string shared = shared_gpu(device, host_world);
  if (comm == DeviceComm::kAuto) {
    if (!nccl_backend_built() || !shared.empty()) return std::make_unique<StagedCommunicator>(device, host_world);
    return make_nccl_world(device, host_world, options);
  }
  if (!shared.empty()) {
    throw std::runtime_error("device comm nccl: " + shared +
                             "; NCCL needs a GPU per rank: run as many ranks per node as GPUs, or choose mpi "
                             "(collectives staged through host memory) or auto");
  }
  return make_nccl_world(device, host_world, options);
}

}  // namespace tessera
