// DType: the element types Tensors, collectives and checkpoints speak of, with their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

enum class DType : std::uint8_t {
  kF32,   // IEEE binary32
  kBF16,  // bfloat16: f32 with the low 16 mantissa bits dropped (round to nearest even)
  kF16,   // IEEE binary16
  kI32,   // token ids, counters
  kI8,    // signed 8-bit codes (quantized optimizer state)
  kU8,    // unsigned 8-bit codes (quantized optimizer state)
};

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "f32", "bf16", "f16", "i32", "i8", "u8"
bool is_floating(DType dtype);        // f32, bf16, f16

// Parses "f32"/"fp32"/"float32", "bf16"/"bfloat16", "f16"/"fp16"/"float16", "i32"/"int32", "i8"/"int8",
// "u8"/"uint8".
// Throws std::invalid_argument naming `what` (e.g. "--param-dtype") and the accepted spellings.
DType parse_dtype(std::string_view text, std::string_view what = "dtype");

}  // namespace tessera
