// DType sizes, names and parsing.
#include "tessera/precision/dtype.hpp"

#include <stdexcept>

namespace tessera {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kI32: return 4;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
  }
  return "?";
}

bool is_floating(DType dtype) { return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16; }

DType parse_dtype(std::string_view text, std::string_view what) {
  if (text == "f32" || text == "fp32" || text == "float32") return DType::kF32;
  if (text == "bf16" || text == "bfloat16") return DType::kBF16;
  if (text == "f16" || text == "fp16" || text == "float16") return DType::kF16;
  if (text == "i32" || text == "int32") return DType::kI32;
  if (text == "i8" || text == "int8") return DType::kI8;
  if (text == "u8" || text == "uint8") return DType::kU8;
  throw std::invalid_argument(std::string(what) + ": unknown dtype '" + std::string(text) +
                              "'; use one of f32, bf16, f16");
}

}  // namespace tessera
