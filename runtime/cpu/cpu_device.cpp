// CpuDevice memory and copies; CPU thread-count control for OpenMP and OpenBLAS.
#include "runtime/cpu/cpu_device.hpp"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace tessera {
namespace {
constexpr std::size_t kAlignment = 64;
}

std::string CpuDevice::name() const { return "cpu (" + std::to_string(cpu_threads()) + " threads)"; }

void* CpuDevice::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}

void CpuDevice::deallocate(void* ptr, std::size_t) noexcept { std::free(ptr); }

void CpuDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src) std::memmove(dst, src, bytes);
}
void CpuDevice::copy_to_host(void* host_dst, const void* src, std::size_t bytes) { copy(host_dst, src, bytes); }
void CpuDevice::copy_from_host(void* dst, const void* host_src, std::size_t bytes) { copy(dst, host_src, bytes); }
void CpuDevice::fill_zero(void* dst, std::size_t bytes) { std::memset(dst, 0, bytes); }

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

void set_cpu_threads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int cpu_threads() { return omp_get_max_threads(); }

}  // namespace tessera
