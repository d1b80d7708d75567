// CudaDevice: memory through the pool and the pinned cache, copies on the compute stream, the
// streams, and the backend's registration.
#include "tessera/runtime/cuda/cuda_device.hpp"

#include <cstring>
#include <new>
#include <stdexcept>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/gpu_probe.hpp"
#include "tessera/runtime/device_registry.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {
namespace {

int checked_index(int index) {
  const GpuProbe probe = probe_gpus();
  if (probe.count == 0) throw std::runtime_error("device cuda: no usable GPU (" + probe.reason + ")");
  if (index < 0) index = 0;
  if (index >= probe.count) {
    throw std::invalid_argument("device cuda: GPU index " + std::to_string(index) +
                                " is out of range: " + std::to_string(probe.count) + " GPU(s) visible (indices 0.." +
                                std::to_string(probe.count - 1) + ")");
  }
  return index;
}

std::string gpu_name(int index) {
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return "cuda:" + std::to_string(index) + " (" + prop.name + ")";
}

}  // namespace

CudaDevice::CudaDevice(int index, GemmMath gemm_math)
    : index_(checked_index(index)),
      name_(gpu_name(index_)),
      compute_(index_, StreamRole::kCompute),
      communication_(index_, StreamRole::kCommunication),
      copy_(index_, StreamRole::kCopy),
      pool_(index_),
      pending_frees_([this](void* ptr, std::size_t, MemoryKind kind) { release(ptr, kind); }),
      kernels_(index_, compute_.handle(), gemm_math) {
  kernels_.set_host_calls(&compute_);
}

CudaDevice::~CudaDevice() {
  drain();
  pending_frees_.reclaim_all();
  select_cuda_device_noexcept(index_);
  cudaStreamSynchronize(compute_.handle());  // the frees just queued
}

void* CudaDevice::try_allocate(std::size_t bytes, MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice: return pool_.allocate(bytes, compute_.handle());
    case MemoryKind::kPinnedHost:
      select_cuda_device(index_);  // cudaHostAlloc binds to the current device's context
      return pinned_.allocate(bytes);
    case MemoryKind::kNvme: break;
  }
  throw std::invalid_argument(name_ + ": " + memory_kind_name(kind) + " memory is not allocated through a device");
}

void* CudaDevice::allocate(std::size_t bytes, MemoryKind kind) {
  pending_frees_.reclaim_completed();
  if (void* ptr = try_allocate(bytes, kind)) return ptr;
  // Out of memory: let the streams pass what they still use, give back every pending block and
  // the cached free memory, then try once more.
  drain();
  pending_frees_.reclaim_all();
  {
    select_cuda_device(index_);
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(compute_.handle()));  // the frees just queued
  }
  {
    select_cuda_device(index_);
    pool_.trim();
    pinned_.trim();
  }
  if (void* ptr = try_allocate(bytes, kind)) return ptr;
  throw std::bad_alloc();
}

void CudaDevice::release(void* ptr, MemoryKind kind) noexcept {
  if (kind == MemoryKind::kPinnedHost) {
    select_cuda_device_noexcept(index_);  // a block the cache has no room for is freed
    pinned_.give_back(ptr);
  } else {
    pool_.free(ptr, compute_.handle());
  }
}

void CudaDevice::deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept {
  pending_frees_.reclaim_completed();
  pending_frees_.add(ptr, bytes, kind, pending);
}

bool CudaDevice::is_host_memory(const void* ptr) const {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged;
}

void CudaDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  select_cuda_device(index_);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, compute_.handle()));
  if (is_host_memory(dst) || is_host_memory(src)) TESSERA_CUDA_CHECK(cudaStreamSynchronize(compute_.handle()));
}

void CudaDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  select_cuda_device(index_);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDefault, compute_.handle()));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(compute_.handle()));
}

void CudaDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  select_cuda_device(index_);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyDefault, compute_.handle()));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(compute_.handle()));
}

void CudaDevice::fill_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  select_cuda_device(index_);
  if (is_host_memory(dst)) {  // a pinned host tensor: after the work that may still use it
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(compute_.handle()));
    std::memset(dst, 0, bytes);
    return;
  }
  TESSERA_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, compute_.handle()));
}

void CudaDevice::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) {
  CudaStream& s = own(stream, "copy_to_host_async");
  if (bytes == 0) return;
  select_cuda_device(index_);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDefault, s.handle()));
}

void CudaDevice::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) {
  CudaStream& s = own(stream, "copy_from_host_async");
  if (bytes == 0) return;
  select_cuda_device(index_);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyDefault, s.handle()));
}

CudaStream& CudaDevice::cuda_stream(StreamRole role) {
  switch (role) {
    case StreamRole::kCompute: return compute_;
    case StreamRole::kCommunication: return communication_;
    case StreamRole::kCopy: return copy_;
  }
  throw std::invalid_argument("CudaDevice::stream: unknown stream role");
}

Stream& CudaDevice::stream(StreamRole role) { return cuda_stream(role); }

std::exception_ptr CudaDevice::drain() noexcept {
  std::exception_ptr first;
  for (CudaStream* s : {&compute_, &communication_, &copy_}) {
    try {
      s->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  return first;
}

void CudaDevice::synchronize() {
  std::exception_ptr first = drain();
  pending_frees_.reclaim_completed();
  if (first) std::rethrow_exception(first);
}

CudaStream& CudaDevice::own(Stream& stream, const char* what) {
  if (&stream != &compute_ && &stream != &communication_ && &stream != &copy_) {
    throw std::invalid_argument(name_ + ": " + what + ": the stream belongs to another device");
  }
  return static_cast<CudaStream&>(stream);
}

MemoryBudget CudaDevice::memory_budget() const {
  MemoryBudget budget;
  std::size_t free = 0, total = 0;
  {
    select_cuda_device(index_);
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return budget;
    }
  }
  const AllocatorStats pool = pool_.stats();
  const std::int64_t cached = pool.known() ? pool.reserved - pool.allocated : 0;
  budget.process_bytes = static_cast<std::int64_t>(free) + cached;
  budget.process_source = name_ + ": " + format_bytes(static_cast<std::int64_t>(free)) + " free of " +
                          format_bytes(static_cast<std::int64_t>(total)) + " (cudaMemGetInfo) + " +
                          format_bytes(cached) + " cached by this device";
  return budget;
}

AllocatorStats CudaDevice::allocator_stats(MemoryKind kind) const {
  switch (kind) {
    case MemoryKind::kDevice: return pool_.stats();
    case MemoryKind::kPinnedHost: return pinned_.stats();
    case MemoryKind::kNvme: break;
  }
  return {};
}

std::unique_ptr<Device> make_cuda_device(int index, GemmMath gemm_math) {
  return std::make_unique<CudaDevice>(index, gemm_math);
}

namespace detail {
const DeviceRegistration kCudaDeviceRegistration(DeviceBackend{
    DeviceChoice::kCuda, "cuda", [] { return probe_gpus().count; }, [] { return probe_gpus().reason; },
    [](const DeviceOptions& options) { return make_cuda_device(options.index, options.gemm_math); }});
}  // namespace detail

}  // namespace tessera
