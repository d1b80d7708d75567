// CpuDevice memory, copies and streams; the CPU thread count (OpenMP threads, OpenBLAS single-threaded).
#include "tessera/runtime/cpu/cpu_device.hpp"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cpu/host_memory_budget.hpp"
#include "tessera/runtime/device_registry.hpp"

namespace tessera {
namespace {

constexpr std::size_t kStreamCopyMin = std::size_t{1} << 20;  // parallel non-temporal copies and fills from here

}  // namespace

CpuDevice::CpuDevice()
    : pending_frees_([this](void* ptr, std::size_t bytes, MemoryKind) { cache_.release(ptr, bytes); }) {}

CpuDevice::~CpuDevice() {
  try {
    streams_.copy().synchronize();
  } catch (...) {
  }
  pending_frees_.reclaim_all();
}

std::string CpuDevice::name() const { return "cpu (" + std::to_string(cpu_threads()) + " threads)"; }

void* CpuDevice::allocate(std::size_t bytes, MemoryKind) {
  pending_frees_.reclaim_completed();
  return cache_.allocate(bytes);
}

void CpuDevice::deallocate(void* ptr, std::size_t bytes, MemoryKind kind, std::span<const Event> pending) noexcept {
  pending_frees_.reclaim_completed();
  pending_frees_.add(ptr, bytes, kind, pending);
}

void CpuDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src) std::memmove(dst, src, bytes);
}

void CpuDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes >= kStreamCopyMin && host_dst != src) {
    kernels_.functions().parallel_stream_copy(host_dst, src, bytes);
  } else {
    copy(host_dst, src, bytes);
  }
}

void CpuDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) { copy(dst, host_src, bytes); }
void CpuDevice::fill_zero(void* dst, std::size_t bytes) {
  if (bytes >= kStreamCopyMin) {
    kernels_.functions().parallel_stream_zero(dst, bytes);
  } else {
    std::memset(dst, 0, bytes);
  }
}

void CpuDevice::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, Stream& stream) {
  streams_.own(stream, "CpuDevice::copy_to_host_async")
      .launch_host_function([=, copy = kernels_.functions().stream_copy] {
        if (bytes >= kStreamCopyMin) {
          copy(host_dst, src, bytes);
        } else if (bytes > 0) {
          std::memcpy(host_dst, src, bytes);
        }
      });
}

void CpuDevice::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, Stream& stream) {
  streams_.own(stream, "CpuDevice::copy_from_host_async").launch_host_function([=] {
    if (bytes > 0) std::memcpy(dst, host_src, bytes);
  });
}

Stream& CpuDevice::stream(StreamRole role) { return streams_.by_role(role); }

void CpuDevice::synchronize() {
  const std::exception_ptr failure = streams_.synchronize();
  pending_frees_.reclaim_completed();
  if (failure) std::rethrow_exception(failure);
}

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

namespace detail {
const DeviceRegistration kCpuDeviceRegistration(DeviceBackend{DeviceChoice::kCpu, "cpu", [] { return 1; },
                                                              [] { return std::string(); },
                                                              [](const DeviceOptions&) { return make_cpu_device(); }});
}  // namespace detail

void set_cpu_threads(int threads) {
  const int count = threads > 0 ? threads : omp_get_max_threads();
  // CpuKernels::gemm threads its tiles itself: a pthread build of OpenBLAS keeps no pool of its own.
  // The OpenMP build's setter also sets OpenMP's count, so that is set after it.
  openblas_set_num_threads(1);
  omp_set_num_threads(count);
}

int cpu_threads() { return omp_get_max_threads(); }

MemoryBudget CpuDevice::memory_budget() const { return host_memory_budget(); }

}  // namespace tessera
