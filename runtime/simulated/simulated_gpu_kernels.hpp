// SimulatedGpuKernels: the simulated discrete device's Kernels table — the CPU kernels, run on the
// backing memory of the device's own blocks. Every pointer argument is translated through the
// device's address space first, so a kernel handed a host pointer (or pinned host memory) is
// refused with the op's name instead of computing on memory a GPU could not read. A kernel fault
// planted by TESSERA_SIM_GPU_FAULT (FaultInjector) skips the op and hands its name to the device,
// which fails its compute stream with it: the launch itself returns as if it worked.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/simulated/device_address_space.hpp"
#include "tessera/runtime/simulated/fault_injector.hpp"

namespace tessera {

class SimulatedGpuKernels final : public Kernels {
 public:
  // `space` outlives the table.
  explicit SimulatedGpuKernels(const DeviceAddressSpace& space) : space_(space) {}
  // With faults: a launch `faults` says fails runs `on_fault(op)` instead of the op. `faults`
  // outlives the table.
  SimulatedGpuKernels(const DeviceAddressSpace& space, FaultInjector& faults, std::function<void(const char*)> on_fault)
      : space_(space), faults_(&faults), on_fault_(std::move(on_fault)) {}

  const CpuKernels& host_kernels() const { return cpu_; }

#define TESSERA_SIMULATED_ARGS(...) __VA_ARGS__
#define TESSERA_KERNEL_OP(name, group, params, args)                                                            \
  void name params const override {                                                                             \
    call(static_cast<void(CpuKernels::*) params const>(&CpuKernels::name), #name, TESSERA_SIMULATED_ARGS args); \
  }
#include "tessera/runtime/kernel_ops.hpp"
#undef TESSERA_SIMULATED_ARGS

  std::size_t attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      DType dtype) const override {
    return cpu_.attention_scratch_bytes(b, t, c, nh, dtype);
  }
  std::string attention_kernel() const override { return cpu_.attention_kernel(); }

 private:
  template <typename... P, typename... A>
  void call(void (CpuKernels::*op)(P...) const, const char* name, A... args) const {
    if (faults_ != nullptr && faults_->fires(DeviceFaultKind::kKernel, name)) {
      on_fault_(name);
      return;
    }
    (cpu_.*op)(on_device(name, args)...);
  }
  // A pointer argument as the backing memory it stands for; other arguments as they are.
  template <typename T>
  T on_device(const char* op, T value) const {
    if constexpr (std::is_pointer_v<T>) {
      return static_cast<T>(space_.translate(value, op));
    } else {
      return value;
    }
  }

  const DeviceAddressSpace& space_;
  FaultInjector* faults_ = nullptr;
  std::function<void(const char*)> on_fault_;
  CpuKernels cpu_;
};

}  // namespace tessera
