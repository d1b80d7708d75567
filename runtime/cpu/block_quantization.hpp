// block_quantization: runs of 8-bit optimizer codes to floats and back on the CPU, with the codes
// of quantize_code and the values of dequantize_code (runtime/math/quantization_math.hpp). Built
// for a CPU with AVX-512 VBMI, 64 elements go at a time through in-register byte-table lookups
// (runtime/cpu/quantization_tables.hpp) instead of per-element gathers; the rest of a run, and every
// element on other CPUs, goes through the shared element functions.
#pragma once

#include "tessera/runtime/cpu/kernel_level_namespace.hpp"

#include <cstdint>

#include "tessera/runtime/cpu/quantization_tables.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

// Elements the vector path codes at a time: runs (and slices of runs) of multiples of it go through
// it whole, the rest element by element.
inline constexpr std::int64_t kQuantizationWidth = 64;

// Whether this build codes 64 elements at a time (AVX-512 VBMI); the results are the same either way.
bool vector_quantization_built();

// codes (n) stored codes (code ^ tables.code_xor) -> out (n) f32: the map's value times scale.
void dequantize_run(const std::uint8_t* codes, float scale, const QuantizationTables& tables, float* out,
                    std::int64_t n);

// x (n) f32 -> codes (n): the stored code of x[i] * inv_scale (the product rounded to f32 first).
void quantize_run(const float* x, float inv_scale, const QuantizationTables& tables, std::uint8_t* codes,
                  std::int64_t n);

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
