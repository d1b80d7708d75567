// The tolerances a kernel is held to when compared with the CPU kernels (the reference), relative
// to the largest magnitude of the reference output: |actual - expected| <= tol * max|expected|.
// One table for every backend test, by the arithmetic the kernel ran in.
#pragma once

#include "tessera/precision/dtype.hpp"

namespace tessera {

// f32 inputs, f32 arithmetic (reductions in another order than the CPU's).
inline constexpr double kF32Tolerance = 1e-5;
// f32 inputs whose GEMMs round them to TF32 (10 mantissa bits) on the tensor cores.
inline constexpr double kTf32Tolerance = 2e-3;
// bf16 inputs or outputs (8 mantissa bits), f32 accumulation; also f32 GEMMs run on bf16 tensor cores.
inline constexpr double kBf16Tolerance = 1e-2;

// f32 inputs summed in double (reductions), in another order than the CPU's.
inline constexpr double kF64SumTolerance = 1e-12;

// The tolerance of a kernel whose tensors are `dtype` (f32 or bf16; f16 is held to bf16's).
constexpr double kernel_tolerance(DType dtype) { return dtype == DType::kF32 ? kF32Tolerance : kBf16Tolerance; }

}  // namespace tessera
