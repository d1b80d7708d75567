// CPU 8-bit AdamW: blocks in parallel (each block is independent, so results do not depend on the
// thread count), each through adamw8bit_block with the element roles its parameter segments give.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/cpu/cpu_kernels.hpp"
#include "runtime/kernels/adamw8bit_math.hpp"

namespace tessera {
namespace {

// Roles of the elements of block [lo, hi) from the sorted segments.
void block_roles(std::span<const ParamSegment> segments, std::int64_t lo, std::int64_t hi, ElementRole* role) {
  std::fill(role, role + (hi - lo), ElementRole::kPadding);
  auto it = std::partition_point(segments.begin(), segments.end(),
                                 [lo](const ParamSegment& s) { return s.begin + s.count <= lo; });
  for (; it != segments.end() && it->begin < hi; ++it) {
    const std::int64_t a = std::max(lo, it->begin), b = std::min(hi, it->begin + it->count);
    std::fill(role + (a - lo), role + (b - lo), it->decay ? ElementRole::kDecay : ElementRole::kNoDecay);
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
  const std::int64_t blocks = n / block;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    ElementRole role[kMaxQuantBlock];
    float m_work[kMaxQuantBlock], v_work[kMaxQuantBlock];
    const std::int64_t lo = b * block;
    block_roles(segments, lo, lo + block, role);
    adamw8bit_block(param + lo, grad + lo, m_codes + lo, m_absmax[b], v_codes + lo, v_absmax[b], role, block,
                    no_decay, decay, kSignedDynamicMap, kUnsignedDynamicMap, m_work, v_work);
  }
}

}  // namespace tessera
