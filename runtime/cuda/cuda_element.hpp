// The CUDA kernels' element types for the Kernels table's: a Bf16 tensor is the same two bytes as
// __nv_bfloat16, which the launchers (cuda_ops.hpp) take.
#pragma once

#include <cuda_bf16.h>

#include "tessera/precision/bf16.hpp"

namespace tessera {

inline __nv_bfloat16* nv(Bf16* p) { return reinterpret_cast<__nv_bfloat16*>(p); }
inline const __nv_bfloat16* nv(const Bf16* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
// f32 tensors are the same type on both sides (so code written for either element type can call nv()).
inline float* nv(float* p) { return p; }
inline const float* nv(const float* p) { return p; }

}  // namespace tessera
