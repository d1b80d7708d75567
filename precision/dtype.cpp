// DType sizes, names and parsing.
#include "precision/dtype.hpp"

#include <stdexcept>

namespace tessera {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kI32: return 4;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
  }
  return "?";
}

bool is_floating(DType dtype) { return dtype != DType::kI32; }

DType parse_dtype(std::string_view text, std::string_view what) {
  if (text == "f32" || text == "fp32" || text == "float32") return DType::kF32;
  if (text == "bf16" || text == "bfloat16") return DType::kBF16;
  if (text == "f16" || text == "fp16" || text == "float16") return DType::kF16;
  if (text == "i32" || text == "int32") return DType::kI32;
  throw std::invalid_argument(std::string(what) + ": unknown dtype '" + std::string(text) +
                              "'; use one of f32, bf16, f16");
}

}  // namespace tessera
