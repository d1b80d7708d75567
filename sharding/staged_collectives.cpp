// Staged collectives: host buffers directly for host and meta communicators, through device
// buffers (kCommBuffers) for GPU communicators.
#include "tessera/sharding/staged_collectives.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {
namespace {

void check_device(const Device& device, const Communicator& comm, const char* function) {
  if (device.memory_space() == MemorySpace::kGpu) return;
  throw std::invalid_argument(std::string(function) + ": communicator '" + comm.name() +
                              "' works on GPU memory but the device " + device.name() + " holds " +
                              memory_space_name(device.memory_space()) + " memory");
}

}  // namespace

void all_reduce_host(Device& device, Communicator& comm, Span host, DType dtype, ReduceOp op) {
  if (comm.memory_space() != MemorySpace::kGpu) {
    comm.all_reduce(host, dtype, op).wait();
    return;
  }
  check_device(device, comm, "all_reduce_host");
  const std::size_t bytes = host.count * dtype_size(dtype);
  if (bytes == 0) {
    comm.all_reduce(Span(nullptr, 0), dtype, op).wait();
    return;
  }
  const auto staged = Storage::allocate(device, bytes, MemoryCategory::kCommBuffers);
  device.copy_from_host(staged->data(), host.data, bytes);
  comm.all_reduce(Span(staged->data(), host.count), dtype, op).wait();
  device.copy_to_host(host.data, staged->data(), bytes);
}

void all_gather_host(Device& device, Communicator& comm, ConstSpan host_in, Span host_out, DType dtype) {
  if (comm.memory_space() != MemorySpace::kGpu) {
    comm.all_gather(host_in, host_out, dtype).wait();
    return;
  }
  check_device(device, comm, "all_gather_host");
  const std::size_t in_bytes = host_in.count * dtype_size(dtype);
  const std::size_t out_bytes = host_out.count * dtype_size(dtype);
  const auto staged = Storage::allocate(device, in_bytes + out_bytes, MemoryCategory::kCommBuffers);
  auto* in = static_cast<std::byte*>(staged->data());
  std::byte* out = in + in_bytes;
  device.copy_from_host(in, host_in.data, in_bytes);
  comm.all_gather(ConstSpan(in, host_in.count), Span(out, host_out.count), dtype).wait();
  device.copy_to_host(host_out.data, out, out_bytes);
}

double sum_in_rank_order(Device& device, Communicator& comm, double local) {
  if (comm.memory_space() != MemorySpace::kGpu) return sum_in_rank_order(comm, local);
  // A double travels as two i32 words, so the exchange is exact.
  constexpr std::size_t kWords = sizeof(double) / sizeof(std::int32_t);
  std::int32_t mine[kWords];
  std::memcpy(mine, &local, sizeof local);
  std::vector<std::int32_t> all(kWords * static_cast<std::size_t>(comm.size()));
  all_gather_host(device, comm, ConstSpan(mine, kWords), Span(all.data(), all.size()), DType::kI32);
  double total = 0.0;
  for (int r = 0; r < comm.size(); ++r) {
    double x = 0.0;
    std::memcpy(&x, all.data() + static_cast<std::size_t>(r) * kWords, sizeof x);
    total += x;
  }
  return total;
}

}  // namespace tessera
