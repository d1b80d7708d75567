// GemmMath names and parsing.
#include "tessera/runtime/gemm_math.hpp"

#include <stdexcept>
#include <string>

namespace tessera {

const char* gemm_math_name(GemmMath math) {
  switch (math) {
    case GemmMath::kF32: return "f32";
    case GemmMath::kTf32: return "tf32";
    case GemmMath::kBf16: return "bf16";
  }
  return "unknown";
}

GemmMath parse_gemm_math(std::string_view text, std::string_view what) {
  for (GemmMath math : {GemmMath::kF32, GemmMath::kTf32, GemmMath::kBf16}) {
    if (text == gemm_math_name(math)) return math;
  }
  throw std::invalid_argument(std::string(what) + " = '" + std::string(text) +
                              "' is not a GEMM arithmetic; use f32, tf32 or bf16");
}

}  // namespace tessera
