// CpuKernels: the CPU device's Kernels table — every op forwards to the kernels of one CPU kernel
// level (kernel_level.hpp): by default the level the process chose at start-up, or the one given
// (tests compare the levels this way). The kernels themselves are level_kernels.hpp's.
#pragma once

#include "tessera/runtime/cpu/kernel_level.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

class CpuKernels final : public Kernels {
 public:
  // The process's level (cpu_kernel_level(); throws as it does when TESSERA_CPU_KERNELS is wrong).
  CpuKernels();
  // A given level; throws std::invalid_argument when this binary lacks it (a level the CPU cannot
  // run is the caller's to avoid: supported_cpu_kernel_levels()).
  explicit CpuKernels(CpuKernelLevel level);

  CpuKernelLevel level() const { return level_; }
  // The level's host copies (host_copy.hpp).
  const CpuLevelFunctions& functions() const { return *functions_; }

#define TESSERA_KERNEL_OP(name, group, params, args) \
  void name params const override { functions_->kernels->name args; }
#include "tessera/runtime/kernel_ops.hpp"

 private:
  CpuKernelLevel level_;
  const CpuLevelFunctions* functions_;
};

// The process's CPU kernels, for work the host does beside a discrete device (the optimizer update
// of state offloaded from a GPU to host memory). Made on first use.
const CpuKernels& host_kernels();

}  // namespace tessera
