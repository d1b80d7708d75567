// CudaDevice: one GPU as a Device (runtime/device.hpp), so the modules, the sharding engine, the
// planner and the trainer run on it unchanged.
//   streams   compute, communication and copy: three non-blocking CUDA streams (CudaStream); the
//             kernels (CudaKernels) run on the compute stream, NCCL collectives on the
//             communication stream (comm/device_communicator.hpp), async copies on the stream given
//   memory    kDevice: a stream-ordered CUDA memory pool of its own (CudaMemoryPool) that caches
//             what it reserved; kPinnedHost: cached cudaHostAlloc blocks (PinnedHostCache). Storage
//             books every byte in the trackers as on the CPU; allocator_stats() says what the
//             allocators hold. Out of memory: the device waits for its streams, frees its caches and
//             tries once more, then throws std::bad_alloc (Storage names device and category).
//   freeing   a block given back with pending events (Storage::record_stream) waits aside until the
//             events completed, then goes back to its allocator — device memory in compute-stream
//             order. Memory from allocate() is ready in compute-stream order: work on another stream
//             that uses fresh memory first waits for an event of the compute stream (the NCCL
//             communicator does so before every collective).
//   copies    synchronous ones run on the compute stream after the work queued there; those that
//             touch host memory then wait for it, so the host may read or reuse its buffer when they
//             return, while a device-to-device copy and fill_zero are only queued (every later use of
//             device memory is ordered after them: compute-stream work, the synchronous host copies,
//             collectives)
// CUDA errors throw std::runtime_error with the call, file:line, the decoded error and the GPU.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "tessera/runtime/cuda/cuda_kernels.hpp"
#include "tessera/runtime/cuda/cuda_memory_pool.hpp"
#include "tessera/runtime/cuda/cuda_stream.hpp"
#include "tessera/runtime/cuda/pinned_host_cache.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/pending_free_list.hpp"

namespace tessera {

class CudaDevice final : public Device {
 public:
  // GPU `index` among the visible ones; throws std::invalid_argument when there is no such GPU.
  explicit CudaDevice(int index, GemmMath gemm_math = GemmMath::kF32);
  // Waits for every stream (errors ignored), gives back every pending block, frees the caches.
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string name() const override { return name_; }  // "cuda:0 (NVIDIA H100 80GB HBM3)"
  MemorySpace memory_space() const override { return MemorySpace::kGpu; }

  void* allocate(std::size_t bytes, MemoryKind kind) override;
  void deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept override;
  std::size_t pending_free_bytes() const override { return pending_frees_.bytes(); }

  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  void fill_zero(void* dst, std::size_t bytes) override;
  void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) override;
  void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) override;

  Stream& stream(StreamRole role) override;
  void synchronize() override;
  const Kernels& kernels() const override { return kernels_; }
  // This GPU's free memory (cudaMemGetInfo) plus what the pool holds free, as this process's limit.
  MemoryBudget memory_budget() const override;
  AllocatorStats allocator_stats(MemoryKind kind = MemoryKind::kDevice) const override;

  int index() const { return index_; }
  CudaStream& cuda_stream(StreamRole role);
  CudaKernels& cuda_kernels() { return kernels_; }

 private:
  // `stream` as one of this device's streams; throws std::invalid_argument naming `what` otherwise.
  CudaStream& own(Stream& stream, const char* what);
  void* try_allocate(std::size_t bytes, MemoryKind kind);
  void release(void* ptr, MemoryKind kind) noexcept;
  // Waits for every stream; the first failure, if any, is returned instead of thrown.
  std::exception_ptr drain() noexcept;
  bool is_host_memory(const void* ptr) const;

  int index_;
  std::string name_;
  CudaStream compute_;
  CudaStream communication_;
  CudaStream copy_;
  CudaMemoryPool pool_;
  PinnedHostCache pinned_;
  PendingFreeList pending_frees_;  // after the allocators: its blocks go back to them
  CudaKernels kernels_;            // last: its handle and workspace go before the streams
};

// The CUDA device on GPU `index` (-1: GPU 0), as make_device(DeviceChoice::kCuda) makes it.
std::unique_ptr<Device> make_cuda_device(int index = -1, GemmMath gemm_math = GemmMath::kF32);

}  // namespace tessera
