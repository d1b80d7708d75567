// CudaMemoryPool: the GPU memory of a CudaDevice, as one stream-ordered CUDA memory pool
// (cudaMemPool) of its own. Its release threshold is "never", so memory given back stays reserved in
// the pool and the next allocation of that size reuses it without a driver call (a caching
// allocator without a size-class table of our own). Blocks are allocated and freed in the order of
// one stream (the device's compute stream): a block freed there is reused by work queued there
// afterwards. The pool reuses a block freed on one stream for an allocation on another only once the
// free has completed (opportunistic reuse; CUDA's "internal dependencies", which would make the
// allocating stream wait, are switched off), so a block is never handed out while work that used it
// may still run elsewhere.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "tessera/runtime/allocator_stats.hpp"

namespace tessera {

class CudaMemoryPool {
 public:
  explicit CudaMemoryPool(int device);
  // Destroys the pool; memory of blocks still handed out is released once they are freed.
  ~CudaMemoryPool();
  CudaMemoryPool(const CudaMemoryPool&) = delete;
  CudaMemoryPool& operator=(const CudaMemoryPool&) = delete;

  // A block of `bytes` (> 0, 256-byte aligned) ready in the order of `stream`; nullptr when the GPU
  // is out of memory. Other CUDA errors throw (call, file:line, decoded error).
  void* allocate(std::size_t bytes, cudaStream_t stream);
  // Gives `ptr` back in the order of `stream`. Never throws (an error leaks the block).
  void free(void* ptr, cudaStream_t stream) noexcept;
  // Returns the cached free memory to the driver (after an out-of-memory, before retrying).
  void trim() noexcept;

  AllocatorStats stats() const;
  cudaMemPool_t handle() const { return pool_; }

 private:
  int device_;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace tessera
