// LevelKernels: the CPU implementation of the Kernels table as compiled for one instruction-set
// level (OpenBLAS for GEMMs, OpenMP loops for the rest). Each op lives in its own
// runtime/cpu/cpu_<op>.cpp, compiled once per level into tessera::cpu_<level>; element-wise
// formulas come from runtime/math/*_math.hpp so a CUDA build computes the same thing. Code outside
// the kernels uses CpuKernels (cpu_kernels.hpp), which forwards to the level chosen at start-up.
#pragma once

#include "tessera/runtime/cpu/kernel_level.hpp"
#include "tessera/runtime/cpu/kernel_level_namespace.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

class LevelKernels final : public Kernels {
 public:
#define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
#include "tessera/runtime/kernel_ops.hpp"
};

// This level's kernels and host copies (level_functions.cpp).
const CpuLevelFunctions& level_functions();

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
