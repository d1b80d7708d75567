// GemmMath: which arithmetic the CUDA backend's GEMMs use for f32 tensors. kF32 is plain f32 (the
// same arithmetic as the CPU, for parity tests and debugging); kTf32 rounds the inputs to TF32 on
// the tensor cores; kBf16 rounds them to bf16 on the tensor cores. All three accumulate in f32.
// GEMMs on bf16 tensors always use the bf16 tensor cores with f32 accumulation.
#pragma once

#include <string_view>

namespace tessera {

enum class GemmMath { kF32, kTf32, kBf16 };

// "f32", "tf32", "bf16".
const char* gemm_math_name(GemmMath math);

// Parses "f32", "tf32" or "bf16". Throws std::invalid_argument naming `what` (e.g. "--gemm-math"),
// the value and the accepted spellings.
GemmMath parse_gemm_math(std::string_view text, std::string_view what = "gemm math");

}  // namespace tessera
