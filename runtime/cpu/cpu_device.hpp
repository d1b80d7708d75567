// CpuDevice: host memory (64-byte aligned) and the CpuKernels table.
#pragma once

#include "runtime/cpu/cpu_kernels.hpp"
#include "runtime/device.hpp"

namespace tessera {

class CpuDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string name() const override;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) noexcept override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  void fill_zero(void* dst, std::size_t bytes) override;
  void synchronize() override {}
  const Kernels& kernels() const override { return kernels_; }

 private:
  CpuKernels kernels_;
};

}  // namespace tessera
