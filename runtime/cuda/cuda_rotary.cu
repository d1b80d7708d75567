// CUDA rotary position embedding with grouped-query heads (formulas in runtime/math/rotary_math.hpp,
// the CPU's): one grid-stride loop each way, one thread per (position, head, pair j), the pair's
// cosine and sine by cosf / sinf of rotary_angle(position, rotary_inverse_frequency(j, hs, theta)).
// Forward: a thread of query head h writes the pair (j, j + hs/2) of rope(q_h), rope(k) and v of the
// key/value head h / (nh / nkv). Backward: a thread of a query head writes its rotated-back gradient;
// a thread of a key/value head sums the gradients of its group's query heads in head order, then
// rotates the key sum back once (as the CPU does) and writes the value sum. Every output is written
// by one thread: no atomics, the same bits every run.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/rotary_math.hpp"

namespace tessera::detail {
namespace {

// cos and sin of pair j's angle at `position`.
__device__ __forceinline__ void pair_angle(float& c, float& s, std::int64_t position, std::int64_t j, std::int64_t hs,
                                           float theta) {
  const float a = rotary_angle(position, rotary_inverse_frequency(j, hs, theta));
  c = cosf(a);
  s = sinf(a);
}

template <typename T>
__global__ void rotary_forward_kernel(T* qkv, const T* proj, std::int64_t rows, std::int64_t t, std::int64_t nh,
                                      std::int64_t nkv, std::int64_t hs, float theta) {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  for (std::int64_t idx = grid_start(); idx < rows * nh * half; idx += grid_stride()) {
    const std::int64_t r = idx / (nh * half);
    const std::int64_t h = idx / half % nh;
    const std::int64_t j = idx % half;
    const std::int64_t kv = h / group;
    float cs, sn;
    pair_angle(cs, sn, r % t, j, hs, theta);
    const T* p = proj + r * pc;
    T* o = qkv + r * 3 * c;
    float x1 = to_f32(p[h * hs + j]), x2 = to_f32(p[h * hs + j + half]);
    rotary_rotate(x1, x2, cs, sn);
    o[h * hs + j] = from_f32<T>(x1);
    o[h * hs + j + half] = from_f32<T>(x2);
    const T* k = p + c + kv * hs;
    x1 = to_f32(k[j]);
    x2 = to_f32(k[j + half]);
    rotary_rotate(x1, x2, cs, sn);
    o[c + h * hs + j] = from_f32<T>(x1);
    o[c + h * hs + j + half] = from_f32<T>(x2);
    const T* v = p + c + (nkv + kv) * hs;
    o[2 * c + h * hs + j] = v[j];
    o[2 * c + h * hs + j + half] = v[j + half];
  }
}

// Heads [0, nh) of a position are the query heads, [nh, nh + nkv) the key/value heads.
template <typename T>
__global__ void rotary_backward_kernel(T* dproj, const T* dqkv, std::int64_t rows, std::int64_t t, std::int64_t nh,
                                       std::int64_t nkv, std::int64_t hs, float theta) {
  const std::int64_t half = hs / 2, group = nh / nkv, c = nh * hs, pc = (nh + 2 * nkv) * hs;
  const std::int64_t heads = nh + nkv;
  for (std::int64_t idx = grid_start(); idx < rows * heads * half; idx += grid_stride()) {
    const std::int64_t r = idx / (heads * half);
    const std::int64_t h = idx / half % heads;
    const std::int64_t j = idx % half;
    float cs, sn;
    pair_angle(cs, sn, r % t, j, hs, theta);
    const T* d = dqkv + r * 3 * c;
    T* o = dproj + r * pc;
    if (h < nh) {
      float x1 = to_f32(d[h * hs + j]), x2 = to_f32(d[h * hs + j + half]);
      rotary_rotate_back(x1, x2, cs, sn);
      o[h * hs + j] = from_f32<T>(x1);
      o[h * hs + j + half] = from_f32<T>(x2);
      continue;
    }
    const std::int64_t kv = h - nh;
    float k1 = 0.0f, k2 = 0.0f, v1 = 0.0f, v2 = 0.0f;
    for (std::int64_t q = kv * group; q < (kv + 1) * group; ++q) {  // the group's query heads, in order
      k1 += to_f32(d[c + q * hs + j]);
      k2 += to_f32(d[c + q * hs + j + half]);
      v1 += to_f32(d[2 * c + q * hs + j]);
      v2 += to_f32(d[2 * c + q * hs + j + half]);
    }
    rotary_rotate_back(k1, k2, cs, sn);
    o[c + kv * hs + j] = from_f32<T>(k1);
    o[c + kv * hs + j + half] = from_f32<T>(k2);
    o[c + (nkv + kv) * hs + j] = from_f32<T>(v1);
    o[c + (nkv + kv) * hs + j + half] = from_f32<T>(v2);
  }
}

}  // namespace

template <typename T>
void launch_rotary_qkv_forward(T* qkv,         // (b,t,3*nh*hs) written
                               const T* proj,  // (b,t,(nh+2*nkv)*hs)
                               std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv, std::int64_t hs,
                               float theta, cudaStream_t stream) {
  const std::int64_t items = b * t * nh * (hs / 2);
  if (items == 0) return;
  rotary_forward_kernel<T><<<grid_for(items), kThreads, 0, stream>>>(qkv, proj, b * t, t, nh, nkv, hs, theta);
  TESSERA_CUDA_CHECK_LAUNCH("rotary_forward_kernel");
}

template <typename T>
void launch_rotary_qkv_backward(T* dproj,       // (b,t,(nh+2*nkv)*hs) written
                                const T* dqkv,  // (b,t,3*nh*hs)
                                std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv, std::int64_t hs,
                                float theta, cudaStream_t stream) {
  const std::int64_t items = b * t * (nh + nkv) * (hs / 2);
  if (items == 0) return;
  rotary_backward_kernel<T><<<grid_for(items), kThreads, 0, stream>>>(dproj, dqkv, b * t, t, nh, nkv, hs, theta);
  TESSERA_CUDA_CHECK_LAUNCH("rotary_backward_kernel");
}

#define TESSERA_INSTANTIATE_ROTARY(T)                                                                               \
  template void launch_rotary_qkv_forward<T>(T*, const T*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,  \
                                             std::int64_t, float, cudaStream_t);                                    \
  template void launch_rotary_qkv_backward<T>(T*, const T*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                              std::int64_t, float, cudaStream_t);
TESSERA_INSTANTIATE_ROTARY(float)
TESSERA_INSTANTIATE_ROTARY(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_ROTARY

}  // namespace tessera::detail
