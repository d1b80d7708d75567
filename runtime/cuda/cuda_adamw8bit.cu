// CUDA 8-bit AdamW (Dettmers et al. 2021), one thread block per quantization block, as the CPU
// kernel: dequantize m and v (dynamic-map code x the block's absmax, quantization_math.hpp), the
// AdamW element update (adamw_math.hpp) on the elements of a parameter segment, the block's new
// absmax by a block reduction (max: order-free), requantize against it. Each thread keeps its
// kMaxQuantBlock / 256 values in registers. The maps live in device memory, initialised at compile
// time from the same constexpr tables as the CPU's.
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/adamw_math.hpp"
#include "tessera/runtime/math/quantization_math.hpp"

namespace tessera::detail {
namespace {

constexpr int kQuantThreads = kThreads;
constexpr int kQuantItems = static_cast<int>(kMaxQuantBlock / kQuantThreads);
static_assert(kMaxQuantBlock % kQuantThreads == 0);

__device__ const QuantizationMap kSignedMap = kSignedDynamicMap;
__device__ const QuantizationMap kUnsignedMap = kUnsignedDynamicMap;

// The first segment that ends after `at` (segments sorted and disjoint).
__device__ std::int64_t first_segment_ending_after(const ParamSegment* segments, std::int64_t count, std::int64_t at) {
  std::int64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (segments[mid].begin + segments[mid].count <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// A chunk of the segment table, passed by value (kernel parameters are copied at launch, so the host
// table may change or go away as soon as the launch returns).
constexpr int kSegmentsPerLaunch = 128;  // 3 KiB of parameters
struct SegmentChunk {
  ParamSegment segments[kSegmentsPerLaunch];
};

__global__ void store_segments_kernel(ParamSegment* dst, SegmentChunk chunk, int count) {
  if (static_cast<int>(threadIdx.x) < count) dst[threadIdx.x] = chunk.segments[threadIdx.x];
}

template <typename T>
__global__ void __launch_bounds__(kQuantThreads)
    adamw8bit_kernel(float* param, const T* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                     float* v_absmax, T* param_copy, std::int64_t block, const ParamSegment* segments,
                     std::int64_t segment_count, AdamWScalars no_decay, AdamWScalars decay) {
  __shared__ float shared[kWarp];
  const std::int64_t b = blockIdx.x;
  const std::int64_t lo = b * block;
  const float m_scale = m_absmax[b];
  const float v_scale = v_absmax[b];
  std::int64_t seg = first_segment_ending_after(segments, segment_count, lo);
  float m[kQuantItems];
  float v[kQuantItems];
  float m_max = 0.0f;
  float v_max = 0.0f;
#pragma unroll
  for (int k = 0; k < kQuantItems; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * kQuantThreads;
    m[k] = 0.0f;
    v[k] = 0.0f;
    if (i >= block) continue;
    const std::int64_t at = lo + i;
    float mi = dequantize_code(i8_to_signed_code(m_codes[at]), kSignedMap) * m_scale;
    float vi = dequantize_code(v_codes[at], kUnsignedMap) * v_scale;
    while (seg < segment_count && segments[seg].begin + segments[seg].count <= at) ++seg;  // `at` only grows
    if (seg < segment_count && segments[seg].begin <= at) {
      float p = param[at];
      adamw_element(p, to_f32(grad[at]), mi, vi, segments[seg].decay ? decay : no_decay);
      param[at] = p;
      if (param_copy != nullptr) param_copy[at] = from_f32<T>(p);
    }
    m[k] = mi;
    v[k] = vi;
    m_max = fmaxf(m_max, fabsf(mi));
    v_max = fmaxf(v_max, vi);
  }
  m_max = block_max(m_max, shared);
  v_max = block_max(v_max, shared);
  if (threadIdx.x == 0) {
    m_absmax[b] = m_max;
    v_absmax[b] = v_max;
  }
  const float m_inv = m_max > 0.0f ? 1.0f / m_max : 0.0f;
  const float v_inv = v_max > 0.0f ? 1.0f / v_max : 0.0f;
#pragma unroll
  for (int k = 0; k < kQuantItems; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * kQuantThreads;
    if (i >= block) continue;
    m_codes[lo + i] = signed_code_to_i8(quantize_code(m[k] * m_inv, kSignedMap));
    v_codes[lo + i] = quantize_code(v[k] * v_inv, kUnsignedMap);
  }
}

}  // namespace

void launch_store_segments(ParamSegment* dst, std::span<const ParamSegment> segments, cudaStream_t stream) {
  for (std::size_t first = 0; first < segments.size(); first += kSegmentsPerLaunch) {
    SegmentChunk chunk{};
    const std::size_t left = segments.size() - first;
    const int count = static_cast<int>(left < kSegmentsPerLaunch ? left : kSegmentsPerLaunch);
    for (int i = 0; i < count; ++i) chunk.segments[i] = segments[first + static_cast<std::size_t>(i)];
    store_segments_kernel<<<1, kSegmentsPerLaunch, 0, stream>>>(dst + first, chunk, count);
    TESSERA_CUDA_CHECK_LAUNCH("store_segments_kernel");
  }
}

template <typename T>
void launch_adamw8bit(float* param,           // (n) updated
                      const T* grad,          // (n)
                      std::int8_t* m_codes,   // (n) updated
                      float* m_absmax,        // (n / block) updated
                      std::uint8_t* v_codes,  // (n) updated
                      float* v_absmax,        // (n / block) updated
                      T* param_copy,          // (n) written where updated, or null
                      std::int64_t n, std::int64_t block, const ParamSegment* segments, std::int64_t segment_count,
                      const AdamWScalars& no_decay, const AdamWScalars& decay, cudaStream_t stream) {
  if (block < 1 || block > kMaxQuantBlock || n % block != 0) {
    throw std::invalid_argument("adamw8bit_update: " + std::to_string(n) + " elements do not split into blocks of " +
                                std::to_string(block) + " (1 to " + std::to_string(kMaxQuantBlock) + ")");
  }
  if (n == 0) return;
  adamw8bit_kernel<T><<<static_cast<unsigned>(n / block), kQuantThreads, 0, stream>>>(
      param, grad, m_codes, m_absmax, v_codes, v_absmax, param_copy, block, segments, segment_count, no_decay, decay);
  TESSERA_CUDA_CHECK_LAUNCH("adamw8bit_kernel");
}

template void launch_adamw8bit<float>(float*, const float*, std::int8_t*, float*, std::uint8_t*, float*, float*,
                                      std::int64_t, std::int64_t, const ParamSegment*, std::int64_t,
                                      const AdamWScalars&, const AdamWScalars&, cudaStream_t);
template void launch_adamw8bit<__nv_bfloat16>(float*, const __nv_bfloat16*, std::int8_t*, float*, std::uint8_t*, float*,
                                              __nv_bfloat16*, std::int64_t, std::int64_t, const ParamSegment*,
                                              std::int64_t, const AdamWScalars&, const AdamWScalars&, cudaStream_t);

}  // namespace tessera::detail
