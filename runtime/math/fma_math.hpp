// fma_math: madd(a, b, c) = a * b + c, fused (one rounding) where the hardware has an FMA
// instruction — CUDA devices, x86-64 code built with FMA (the avx2 and avx512 CPU kernel levels,
// runtime/cpu/kernel_level.hpp), ARM64. Elsewhere (the portable level) it is computed in double: the
// product of two floats is exact there, so the result is the fused one but for a rare double rounding
// (half an ulp at most), and the formulas built on madd (exp_math.hpp's range reductions take the
// fraction of an unrounded product) keep their error bounds without an FMA unit.
//
// Why the formulas in runtime/math/ spell their multiply-adds out: GCC contracts a * b + c into
// an FMA in C++ whatever the -std (its "-ffp-contract=off" default for ISO modes applies to C
// only), and nvcc contracts by default, wherever the optimiser sees a product feeding an add — so
// what gets fused depends on the surrounding code, and a scalar call and a vectorised loop of the
// same formula could round differently. A formula whose every product feeding an add goes
// through madd (or is exact, e.g. a multiplication by a power of two) leaves nothing to contract:
// scalar code, vector code and a CUDA kernel run the same operations and give the same bits.
// Without a hardware FMA the compiler has nothing to contract into either, so the double
// fallback is deterministic too (the portable level may give other last bits than the FMA levels).
#pragma once

#include <cmath>

#include "tessera/precision/host_device.hpp"

namespace tessera {

TESSERA_HD float madd(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__FMA__) || defined(__aarch64__)
  return fmaf(a, b, c);
#else
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) + static_cast<double>(c));
#endif
}

}  // namespace tessera
