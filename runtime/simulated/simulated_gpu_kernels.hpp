// SimulatedGpuKernels: the simulated discrete device's Kernels table — the CPU kernels, run on the
// backing memory of the device's own blocks. Every pointer argument is translated through the
// device's address space first, so a kernel handed a host pointer (or pinned host memory) is
// refused with the op's name instead of computing on memory a GPU could not read.
#pragma once

#include <type_traits>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/simulated/device_address_space.hpp"

namespace tessera {

class SimulatedGpuKernels final : public Kernels {
 public:
  // `space` outlives the table.
  explicit SimulatedGpuKernels(const DeviceAddressSpace& space) : space_(space) {}

  const CpuKernels& host_kernels() const { return cpu_; }

#define TESSERA_SIMULATED_ARGS(...) __VA_ARGS__
#define TESSERA_KERNEL_OP(name, group, params, args)                                                        \
  void name params const override {                                                                        \
    call(static_cast<void (CpuKernels::*) params const>(&CpuKernels::name), #name, TESSERA_SIMULATED_ARGS args); \
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
  CpuKernels cpu_;
};

}  // namespace tessera
