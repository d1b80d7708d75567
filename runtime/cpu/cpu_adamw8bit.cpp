// CPU 8-bit AdamW (Dettmers et al. 2021): blocks in parallel (each block is independent, so results
// do not depend on the thread count). Per block: dequantize m and v (dynamic-map code x the block's
// absmax), AdamW over each parameter run through the shared element formula eight lanes at a time
// (adamw_range), then requantize against the block's new absmax (quantize_code). Every pass over a
// block is a vector loop (the table lookups take 32-bit indices; the absmax is an exact max).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/cpu/adamw_range.hpp"
#include "runtime/cpu/cpu_kernels.hpp"
#include "runtime/kernels/quantization_math.hpp"

namespace tessera {
namespace {

// Calls update(lo, hi, decay) for every parameter run inside [block_lo, block_hi), in order.
template <class Update>
void for_each_run(std::span<const ParamSegment> segments, std::int64_t block_lo, std::int64_t block_hi,
                  Update update) {
  auto it = std::partition_point(segments.begin(), segments.end(),
                                 [block_lo](const ParamSegment& s) { return s.begin + s.count <= block_lo; });
  for (; it != segments.end() && it->begin < block_hi; ++it) {
    update(std::max(block_lo, it->begin), std::min(block_hi, it->begin + it->count), it->decay);
  }
}

}  // namespace

void CpuKernels::adamw8bit_update(float* param,            // (n) updated
                                  const float* grad,       // (n)
                                  std::int8_t* m_codes,    // (n) updated
                                  float* m_absmax,         // (n / block) updated
                                  std::uint8_t* v_codes,   // (n) updated
                                  float* v_absmax,         // (n / block) updated
                                  std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                                  const AdamWScalars& no_decay, const AdamWScalars& decay) const {
  if (block < 1 || block > kMaxQuantBlock || n % block != 0) {
    throw std::invalid_argument("adamw8bit_update: " + std::to_string(n) + " elements do not split into blocks of " +
                                std::to_string(block) + " (1 to " + std::to_string(kMaxQuantBlock) + ")");
  }
  const QuantizationMap& sm = kSignedDynamicMap;
  const QuantizationMap& um = kUnsignedDynamicMap;
  const std::int64_t blocks = n / block;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    alignas(64) float m[kMaxQuantBlock], v[kMaxQuantBlock];
    const std::int64_t lo = b * block;
    std::int8_t* mq = m_codes + lo;
    std::uint8_t* vq = v_codes + lo;
    const float ms = m_absmax[b], vs = v_absmax[b];
#pragma omp simd
    for (std::int64_t i = 0; i < block; ++i) {
      m[i] = dequantize_code(i8_to_signed_code(mq[i]), sm) * ms;
      v[i] = dequantize_code(vq[i], um) * vs;
    }
    for_each_run(segments, lo, lo + block, [&](std::int64_t a, std::int64_t z, bool d) {
      detail::adamw_range(param + a, grad + a, m + (a - lo), v + (a - lo), z - a, d ? decay : no_decay);
    });
    float m_max = 0.0f, v_max = 0.0f;  // exact, so the vector lanes' order does not matter
#pragma omp simd reduction(max : m_max, v_max)
    for (std::int64_t i = 0; i < block; ++i) {
      const float m_abs = std::fabs(m[i]);
      m_max = m_abs > m_max ? m_abs : m_max;
      v_max = v[i] > v_max ? v[i] : v_max;
    }
    m_absmax[b] = m_max;
    v_absmax[b] = v_max;
    const float m_inv = m_max > 0.0f ? 1.0f / m_max : 0.0f, v_inv = v_max > 0.0f ? 1.0f / v_max : 0.0f;
#pragma omp simd
    for (std::int64_t i = 0; i < block; ++i) {
      mq[i] = signed_code_to_i8(quantize_code(m[i] * m_inv, sm));
      vq[i] = quantize_code(v[i] * v_inv, um);
    }
  }
}

}  // namespace tessera
