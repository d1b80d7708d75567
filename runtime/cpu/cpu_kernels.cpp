// CpuKernels: the table of the chosen CPU kernel level.
#include "tessera/runtime/cpu/cpu_kernels.hpp"

namespace tessera {

CpuKernels::CpuKernels() : CpuKernels(cpu_kernel_level()) {}

CpuKernels::CpuKernels(CpuKernelLevel level) : level_(level), functions_(&cpu_level_functions(level)) {}

const CpuKernels& host_kernels() {
  static const CpuKernels kernels;
  return kernels;
}

}  // namespace tessera
