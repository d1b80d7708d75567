// adamw8bit_math: one block of 8-bit AdamW (Dettmers et al. 2021) as a TESSERA_HD function the CPU
// kernel runs per block and a CUDA kernel can run per thread block: dequantize the block's m and v
// (codes x the block's absolute maximum), apply the AdamW element update (adamw_math.hpp) to every
// element that belongs to a parameter, then requantize m and v against their new absolute maxima.
//
//   m codes: i8 (signed dynamic map), v codes: u8 (unsigned map), one f32 absmax each per block.
// A block whose values are all zero stores absmax 0 (its codes then decode to 0 whatever they are).
#pragma once

#include <cstdint>

#include "precision/host_device.hpp"
#include "runtime/kernels/adamw_math.hpp"
#include "runtime/kernels/quantization_math.hpp"

namespace tessera {

// What an element of a block is: padding (left alone), or a parameter element with or without
// weight decay.
enum class ElementRole : std::uint8_t { kPadding = 0, kNoDecay = 1, kDecay = 2 };

// param, grad (n) f32; m_codes (n) i8, v_codes (n) u8; m_absmax, v_absmax the block's scales
// (read and rewritten); role (n); m_work, v_work (n) f32 scratch. n is the block's length.
TESSERA_HD void adamw8bit_block(float* param, const float* grad, std::int8_t* m_codes, float& m_absmax,
                                std::uint8_t* v_codes, float& v_absmax, const ElementRole* role, std::int64_t n,
                                const AdamWScalars& no_decay, const AdamWScalars& decay,
                                const QuantizationMap& signed_map, const QuantizationMap& unsigned_map, float* m_work,
                                float* v_work) {
  float m_max = 0.0f, v_max = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    float m = dequantize_code(i8_to_signed_code(m_codes[i]), signed_map) * m_absmax;
    float v = dequantize_code(v_codes[i], unsigned_map) * v_absmax;
    if (role[i] != ElementRole::kPadding) {
      float p = param[i];
      adamw_element(p, grad[i], m, v, role[i] == ElementRole::kDecay ? decay : no_decay);
      param[i] = p;
    }
    m_work[i] = m;
    v_work[i] = v;
    const float am = m < 0.0f ? -m : m;
    m_max = am > m_max ? am : m_max;
    v_max = v > v_max ? v : v_max;
  }
  m_absmax = m_max;
  v_absmax = v_max;
  for (std::int64_t i = 0; i < n; ++i) {
    const float mn = m_max > 0.0f ? m_work[i] / m_max : 0.0f;
    const float vn = v_max > 0.0f ? v_work[i] / v_max : 0.0f;
    m_codes[i] = signed_code_to_i8(quantize_code(mn, signed_map));
    v_codes[i] = quantize_code(vn, unsigned_map);
  }
}

}  // namespace tessera
