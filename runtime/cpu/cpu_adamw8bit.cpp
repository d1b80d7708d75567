// CPU 8-bit AdamW (Dettmers et al. 2021): blocks in parallel (each block is independent, so results
// do not depend on the thread count). Per block: dequantize m and v (dynamic-map code x the block's
// absmax), AdamW over each parameter run through the shared element formula 16 lanes at a time
// (adamw_range), then requantize against the block's new absmax. Dequantizing and requantizing go
// through block_quantization: 64 codes at a time by in-register table lookups where the CPU has
// AVX-512 VBMI, with the codes and values of the shared element functions either way.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cpu/adamw_range.hpp"
#include "tessera/runtime/cpu/block_quantization.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

// Calls update(lo, hi, decay) for every parameter run inside [block_lo, block_hi), in order.
template <class Update>
void for_each_run(std::span<const ParamSegment> segments, std::int64_t block_lo, std::int64_t block_hi, Update update) {
  auto it = std::partition_point(segments.begin(), segments.end(),
                                 [block_lo](const ParamSegment& s) { return s.begin + s.count <= block_lo; });
  for (; it != segments.end() && it->begin < block_hi; ++it) {
    update(std::max(block_lo, it->begin), std::min(block_hi, it->begin + it->count), it->decay);
  }
}

// Requantizing goes in slices (multiples of the quantization width), prefetching between them.
constexpr std::int64_t kSlices = 8;
constexpr std::int64_t kFloatsPerLine = 16;  // of a 64-byte cache line; four lines of floats per line of codes

// Prefetches float lines [first, last) of the block at lo: its parameters and gradients, and the
// lines of both codes they start.
void prefetch_lines(const float* param, const float* grad, const std::int8_t* m_codes, const std::uint8_t* v_codes,
                    std::int64_t lo, std::int64_t first, std::int64_t last) {
  for (std::int64_t line = first; line < last; ++line) {
    const std::int64_t at = lo + line * kFloatsPerLine;
    __builtin_prefetch(param + at);
    __builtin_prefetch(grad + at);
    if (line % 4 == 0) {
      __builtin_prefetch(m_codes + at);
      __builtin_prefetch(v_codes + at);
    }
  }
}

}  // namespace

void LevelKernels::adamw8bit_update(float* param,           // (n) updated
                                  const float* grad,      // (n)
                                  std::int8_t* m_codes,   // (n) updated
                                  float* m_absmax,        // (n / block) updated
                                  std::uint8_t* v_codes,  // (n) updated
                                  float* v_absmax,        // (n / block) updated
                                  std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                                  const AdamWScalars& no_decay, const AdamWScalars& decay) const {
  if (block < 1 || block > kMaxQuantBlock || n % block != 0) {
    throw_quant_blocks(n, block);
  }
  const std::int64_t blocks = n / block;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    alignas(64) float m[kMaxQuantBlock], v[kMaxQuantBlock];
    const std::int64_t lo = b * block;
    auto* mq = reinterpret_cast<std::uint8_t*>(m_codes + lo);  // i8 codes as bytes: code ^ 0x80
    std::uint8_t* vq = v_codes + lo;
    dequantize_run(mq, m_absmax[b], kSignedQuantizationTables, m, block);
    dequantize_run(vq, v_absmax[b], kUnsignedQuantizationTables, v, block);
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
    // Requantize slice by slice, asking between slices for a share of the next block's lines: its
    // memory traffic then overlaps this block's compute (a burst of prefetches at once would not:
    // a core tracks few misses at a time).
    constexpr std::int64_t kWidth = kQuantizationWidth;
    const std::int64_t slice = (block + kSlices * kWidth - 1) / (kSlices * kWidth) * kWidth;
    const std::int64_t slices = (block + slice - 1) / slice;
    const std::int64_t lines = (block + kFloatsPerLine - 1) / kFloatsPerLine;
    const std::int64_t lines_per_slice = (lines + slices - 1) / slices;
    for (std::int64_t at = 0, s = 0; at < block; at += slice, ++s) {
      const std::int64_t count = std::min(slice, block - at);
      quantize_run(m + at, m_inv, kSignedQuantizationTables, mq + at, count);
      quantize_run(v + at, v_inv, kUnsignedQuantizationTables, vq + at, count);
      if (b + 1 < blocks) {
        prefetch_lines(param, grad, m_codes, v_codes, lo + block, s * lines_per_slice,
                       std::min(lines, (s + 1) * lines_per_slice));
      }
    }
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
