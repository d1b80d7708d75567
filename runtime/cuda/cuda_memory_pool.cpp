// CudaMemoryPool: cudaMemPoolCreate with a release threshold of "never", allocations through
// cudaMallocFromPoolAsync, figures from the pool's attributes.
#include "tessera/runtime/cuda/cuda_memory_pool.hpp"

#include <cstdint>
#include <limits>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"

namespace tessera {
namespace {

std::int64_t attribute(cudaMemPool_t pool, cudaMemPoolAttr which) {
  std::uint64_t value = 0;
  if (cudaMemPoolGetAttribute(pool, which, &value) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace

CudaMemoryPool::CudaMemoryPool(int device) : device_(device) {
  select_cuda_device(device_);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device_;
  TESSERA_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
  std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
  int off = 0;
  TESSERA_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &never));
  TESSERA_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &off));
}

CudaMemoryPool::~CudaMemoryPool() {
  select_cuda_device_noexcept(device_);
  cudaMemPoolDestroy(pool_);
}

void* CudaMemoryPool::allocate(std::size_t bytes, cudaStream_t stream) {
  select_cuda_device(device_);
  void* ptr = nullptr;
  const cudaError_t result = cudaMallocFromPoolAsync(&ptr, bytes, pool_, stream);
  if (result == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the next call does not see it
    return nullptr;
  }
  TESSERA_CUDA_CHECK(result);
  return ptr;
}

void CudaMemoryPool::free(void* ptr, cudaStream_t stream) noexcept {
  select_cuda_device_noexcept(device_);
  if (cudaFreeAsync(ptr, stream) != cudaSuccess) cudaGetLastError();
}

void CudaMemoryPool::trim() noexcept {
  if (cudaMemPoolTrimTo(pool_, 0) != cudaSuccess) cudaGetLastError();
}

AllocatorStats CudaMemoryPool::stats() const {
  AllocatorStats s;
  s.allocated = attribute(pool_, cudaMemPoolAttrUsedMemCurrent);
  s.peak_allocated = attribute(pool_, cudaMemPoolAttrUsedMemHigh);
  s.reserved = attribute(pool_, cudaMemPoolAttrReservedMemCurrent);
  s.peak_reserved = attribute(pool_, cudaMemPoolAttrReservedMemHigh);
  return s;
}

}  // namespace tessera
