// CpuKernels: the CPU implementation of the Kernels table (OpenBLAS for GEMMs, OpenMP loops for the
// rest). Each op lives in its own runtime/cpu/cpu_<op>.cpp; element-wise formulas come from
// runtime/math/*_math.hpp so a CUDA build computes the same thing.
#pragma once

#include "tessera/runtime/kernels.hpp"

namespace tessera {

class CpuKernels final : public Kernels {
 public:
#define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
#include "tessera/runtime/kernel_ops.hpp"
};

}  // namespace tessera
