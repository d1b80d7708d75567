// CUDA causal multi-head self-attention, tiled with an online softmax (FlashAttention's algorithm):
// the fallback where no fused library kernel (cuDNN SDPA) is used. No (t,t) tensor exists at any
// time; forward keeps only out and each row's log-sum-exp, and backward recomputes every
// probability from q, k and lse, with the row statistics of runtime/math/online_softmax_math.hpp
// (the CPU kernel's, runtime/cpu/cpu_attention.cpp). Per (batch, head) pair, with q, k, v (t,hs)
// read in place from qkv (row stride 3c):
//
//   forward:   S = scale q k^T;  P = softmax_causal(S) tile by tile;  out = P v;  lse = logsumexp(S)
//   backward:  delta = rowsum(dout * out);  P = exp(S - lse);  dv = P^T dout;  dP = dout v^T;
//              dS = scale P (dP - delta);  dk = dS^T q;  dq = dS k
//
// Blocking. A thread block is kRows warps, one row each (a query in forward and dq, a key in dk/dv),
// kRows consecutive rows of one pair. The other side is walked in tiles of kTile = 32 rows, one per
// lane, staged in shared memory as f32 with an odd row stride (a lane reading element d of its row
// then hits its own bank): each lane forms its score by a sequential dot product over the head, the
// warp's shuffles broadcast the lane's weight, and each lane accumulates the head dims
// d = lane + 32u of its warp's row. The kernels:
//   forward:  query rows x key tiles up to the block's last query; the running maximum and sum by
//             warp_max / warp_sum (every lane holds the same statistics), out scaled at the end.
//   delta:    one warp per row of dout * out.
//   dk, dv:   key rows x query tiles from the tile holding the block's first key to t.
//   dq:       query rows x key tiles up to the block's last query.
// A score is the same dot product, in the same order, in all three of forward, dk/dv and dq, so
// backward's probabilities are computed from forward's very scores.
//
// Determinism: no atomics; every sum (over d, over the tiles, over the lanes of a tile) runs in a
// fixed order, so a launch gives the same bits every run.
//
// Head size: at most kMaxAttentionHead = 128 (cuda_ops.hpp), so that a block's tiles stay under the
// 48 KiB of static shared memory (per block: forward 36.3 KiB, dk/dv 40.5 KiB, dq 40.3 KiB); a
// larger head throws std::invalid_argument.
#include <cmath>
#include <stdexcept>
#include <string>

#include "tessera/runtime/attention_head.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/online_softmax_math.hpp"

namespace tessera::detail {
namespace {

constexpr int kRows = 8;                         // warps per block: the rows (queries or keys) of a block
constexpr int kTile = kWarp;                     // rows of a shared-memory tile: one per lane
constexpr int kThreadsPerBlock = kRows * kWarp;  // 256
constexpr int kMaxHead = static_cast<int>(kMaxAttentionHead);
constexpr int kUnits = kMaxHead / kWarp;             // head dims a lane accumulates (d = lane + 32u)
constexpr int kTileFloats = kTile * (kMaxHead + 1);  // a tile at the largest (odd) row stride
constexpr int kRowFloats = kRows * kMaxHead;         // a block's own rows, unpadded (read by broadcast)
constexpr unsigned kFullMask = 0xffffffffu;
static_assert(kMaxHead % kWarp == 0);
// A block's rows never straddle a tile boundary, so the tile holding its first row holds them all
// and a query block's first key tile starts at or before its first query.
static_assert(kTile % kRows == 0);
// The largest block (dk, dv): q and dout tiles, k and v rows, lse and delta of a tile.
static_assert((2 * kTileFloats + 2 * kRowFloats + 2 * kTile) * sizeof(float) <= 48 * 1024,
              "attention tiles must fit in static shared memory");

// A call's sizes as the kernels take them. A grid is `pairs * row_blocks` blocks of kRows rows.
struct Dims {
  std::int64_t t, c, nh;
  std::int64_t pairs;       // b * nh
  std::int64_t row_blocks;  // ceil(t / kRows)
  int hs;                   // head size, <= kMaxHead
  float scale;              // 1 / sqrt(hs)
};

Dims attention_dims(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, const char* where) {
  const std::int64_t hs = attention_head_size(c, nh, where);
  if (hs > kMaxAttentionHead) {
    throw std::invalid_argument(std::string(where) + ": head size " + std::to_string(hs) + " exceeds " +
                                std::to_string(kMaxAttentionHead) + ", the largest the CUDA attention kernels take");
  }
  return {t, c, nh, b * nh, (t + kRows - 1) / kRows, static_cast<int>(hs), 1.0f / std::sqrt(static_cast<float>(hs))};
}

unsigned grid_blocks(const Dims& dims) { return static_cast<unsigned>(dims.pairs * dims.row_blocks); }

// Row stride of a tile in shared memory: the head size made odd, so the 32 lanes each reading
// element d of their own row hit 32 different banks.
__device__ __forceinline__ int tile_stride(int hs) { return hs | 1; }

// min(remaining, kTile): the rows of a tile that starts `remaining` rows before the end.
__device__ __forceinline__ int tile_rows(std::int64_t remaining) {
  return remaining < kTile ? static_cast<int>(remaining) : kTile;
}

// Where one (batch, head) pair's tensors start: q at qkv_at in tensors shaped like qkv (k at + c,
// v at + 2c, row stride 3c), its head's columns at out_at in tensors shaped like out (row stride c),
// its rows of lse and delta at stats_at.
struct PairOffsets {
  std::int64_t qkv_at, out_at, stats_at;
};

__device__ __forceinline__ PairOffsets pair_offsets(std::int64_t pair, const Dims& dims) {
  const std::int64_t bi = pair / dims.nh, h = pair % dims.nh;
  return {bi * dims.t * 3 * dims.c + h * dims.hs, bi * dims.t * dims.c + h * dims.hs, pair * dims.t};
}

// This block's pair and first row. Pairs vary fastest across the grid; the row blocks go in the
// order that (as blocks are usually started in index order) starts the longest ones first, so the
// short ones fill in at the end: the last rows first for queries, the first rows first for keys.
struct BlockRows {
  std::int64_t pair, first;
  int rows;  // min(kRows, t - first)
};

__device__ __forceinline__ BlockRows block_rows(const Dims& dims, bool last_rows_first) {
  const std::int64_t task = blockIdx.x;
  const std::int64_t row_block = task / dims.pairs;
  const std::int64_t first = (last_rows_first ? dims.row_blocks - 1 - row_block : row_block) * kRows;
  const std::int64_t left = dims.t - first;
  return {task % dims.pairs, first, left < kRows ? static_cast<int>(left) : kRows};
}

// Copies `rows` rows of hs elements (row stride ld) from src into shared dst (row stride `stride`)
// as f32, by every thread of the block, consecutive threads on consecutive elements of a row.
template <typename T>
__device__ void stage_rows(float* dst, int stride, const T* src, std::int64_t ld, int rows, int hs) {
  for (int e = threadIdx.x; e < rows * hs; e += blockDim.x) {
    const int r = e / hs, d = e % hs;
    dst[r * stride + d] = to_f32(src[r * ld + d]);
  }
}

// a . b over the head, one product at a time in d order: the same bits wherever a score or dP is formed.
__device__ __forceinline__ float head_dot(const float* a, const float* b, int hs) {
  float sum = 0.0f;
  for (int d = 0; d < hs; ++d) sum = fmaf(a[d], b[d], sum);
  return sum;
}

// acc[u] (head dim lane + 32u) += w_r * tile row r, for r in [first, last), w_r being lane r's `w`
// (broadcast by shuffle). The bounds are the same on every lane of the warp.
__device__ __forceinline__ void accumulate_rows(float (&acc)[kUnits], float w, const float* tile, int stride, int first,
                                                int last, int hs, int lane) {
  for (int r = first; r < last; ++r) {
    const float wr = __shfl_sync(kFullMask, w, r);
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      const int d = lane + kWarp * u;
      if (d < hs) acc[u] = fmaf(wr, tile[r * stride + d], acc[u]);
    }
  }
}

__device__ __forceinline__ void scale_head(float (&acc)[kUnits], float factor) {
#pragma unroll
  for (int u = 0; u < kUnits; ++u) acc[u] *= factor;
}

// dst[d] = acc (dim d) * factor for the lane's dims d < hs.
template <typename T>
__device__ __forceinline__ void store_head(T* dst, const float (&acc)[kUnits], float factor, int hs, int lane) {
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    const int d = lane + kWarp * u;
    if (d < hs) dst[d] = from_f32<T>(acc[u] * factor);
  }
}

// Forward: out (b,t,c) and lse (b,nh,t) from qkv (b,t,3c). Warp w of the block is query i = first + w;
// lane l of a key tile is key j = j0 + l.
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_forward_kernel(T* out, float* lse, const T* qkv, Dims dims) {
  __shared__ float k_tile[kTileFloats], v_tile[kTileFloats], q_rows[kRowFloats];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int hs = dims.hs, stride = tile_stride(hs);
  const std::int64_t ld = 3 * dims.c;
  const BlockRows blk = block_rows(dims, true);
  const PairOffsets at = pair_offsets(blk.pair, dims);
  const T* q = qkv + at.qkv_at;
  const T* k = q + dims.c;
  const T* v = q + 2 * dims.c;
  const std::int64_t i = blk.first + warp;
  const bool active = warp < blk.rows;  // rows past t only help stage the tiles
  const float* q_row = q_rows + warp * hs;
  stage_rows(q_rows, hs, q + blk.first * ld, ld, blk.rows, hs);

  OnlineSoftmaxRow row;
  float acc[kUnits] = {};
  const std::int64_t key_end = blk.first + blk.rows;  // keys past the block's last query are masked for all of it
  for (std::int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    const int cols = tile_rows(key_end - j0);
    __syncthreads();  // the previous tile has been read
    stage_rows(k_tile, stride, k + j0 * ld, ld, cols, hs);
    stage_rows(v_tile, stride, v + j0 * ld, ld, cols, hs);
    __syncthreads();
    if (!active) continue;
    const bool visible = j0 + lane <= i;
    float s = -INFINITY;
    if (visible) s = dims.scale * head_dot(q_row, k_tile + lane * stride, hs);
    const float factor = online_softmax_fold(row, warp_max(s));
    // A masked key's term is 0, not online_softmax_term(-inf) (softmax_exp clamps, giving ~1e-38).
    const float p = visible ? online_softmax_term(s, row.max) : 0.0f;
    row.sum += warp_sum(p);
    if (factor != 1.0f) scale_head(acc, factor);  // the output so far, to the new maximum
    const std::int64_t seen = i - j0 + 1;         // keys of the tile that query i sees
    accumulate_rows(acc, p, v_tile, stride, 0, seen < cols ? static_cast<int>(seen) : cols, hs, lane);
  }
  if (!active) return;
  store_head(out + at.out_at + i * dims.c, acc, online_softmax_inverse_sum(row), hs, lane);
  if (lane == 0) lse[at.stats_at + i] = online_softmax_lse(row);
}

// delta (b,nh,t) = rowsum(dout * out) over each head's columns of dout, out (b,t,c): one warp per
// row (pair, i).
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_delta_kernel(float* delta, const T* dout, const T* out, Dims dims) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRows + threadIdx.x / kWarp;
  if (row >= dims.pairs * dims.t) return;  // the whole warp
  const int lane = threadIdx.x % kWarp;
  const std::int64_t pair = row / dims.t, i = row % dims.t;
  const std::int64_t at = pair_offsets(pair, dims).out_at + i * dims.c;
  float sum = 0.0f;
  for (int d = lane; d < dims.hs; d += kWarp) sum = fmaf(to_f32(dout[at + d]), to_f32(out[at + d]), sum);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

// dk, dv written into dqkv (b,t,3c), from dout (b,t,c), qkv (b,t,3c), lse and delta (b,nh,t). Warp w
// of the block is key j = first + w; lane l of a query tile is query i = i0 + l.
//   dv_j = sum_i P_ij dout_i;  dk_j = sum_i dS_ij q_i  over the queries i >= j, in i order.
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_key_grad_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta, Dims dims) {
  __shared__ float q_tile[kTileFloats], dout_tile[kTileFloats], k_rows[kRowFloats], v_rows[kRowFloats];
  __shared__ float lse_tile[kTile], delta_tile[kTile];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int hs = dims.hs, stride = tile_stride(hs);
  const std::int64_t ld = 3 * dims.c;
  const BlockRows blk = block_rows(dims, false);
  const PairOffsets at = pair_offsets(blk.pair, dims);
  const T* q = qkv + at.qkv_at;
  const T* d_out = dout + at.out_at;
  const std::int64_t j = blk.first + warp;
  const bool active = warp < blk.rows;
  const float* k_row = k_rows + warp * hs;
  const float* v_row = v_rows + warp * hs;
  stage_rows(k_rows, hs, q + dims.c + blk.first * ld, ld, blk.rows, hs);
  stage_rows(v_rows, hs, q + 2 * dims.c + blk.first * ld, ld, blk.rows, hs);

  float dk[kUnits] = {}, dv[kUnits] = {};
  for (std::int64_t i0 = blk.first / kTile * kTile; i0 < dims.t; i0 += kTile) {
    const int cols = tile_rows(dims.t - i0);
    __syncthreads();  // the previous tile has been read
    stage_rows(q_tile, stride, q + i0 * ld, ld, cols, hs);
    stage_rows(dout_tile, stride, d_out + i0 * dims.c, dims.c, cols, hs);
    if (static_cast<int>(threadIdx.x) < cols) {
      lse_tile[threadIdx.x] = lse[at.stats_at + i0 + threadIdx.x];
      delta_tile[threadIdx.x] = delta[at.stats_at + i0 + threadIdx.x];
    }
    __syncthreads();
    if (!active) continue;
    float p = 0.0f, ds = 0.0f;
    if (lane < cols && i0 + lane >= j) {
      const float s = dims.scale * head_dot(q_tile + lane * stride, k_row, hs);
      p = attention_probability(s, lse_tile[lane]);
      const float dp = head_dot(dout_tile + lane * stride, v_row, hs);
      ds = attention_score_grad(p, dp, delta_tile[lane], dims.scale);
    }
    const int first_seeing = j > i0 ? static_cast<int>(j - i0) : 0;  // lanes below it are earlier queries
    accumulate_rows(dv, p, dout_tile, stride, first_seeing, cols, hs, lane);
    accumulate_rows(dk, ds, q_tile, stride, first_seeing, cols, hs, lane);
  }
  if (!active) return;
  T* dk_out = dqkv + at.qkv_at + dims.c + j * ld;
  store_head(dk_out, dk, 1.0f, hs, lane);
  store_head(dk_out + dims.c, dv, 1.0f, hs, lane);
}

// dq written into dqkv (b,t,3c), from dout (b,t,c), qkv (b,t,3c), lse and delta (b,nh,t). Warp w of
// the block is query i = first + w; lane l of a key tile is key j = j0 + l.
//   dq_i = sum_j dS_ij k_j  over the keys j <= i, in j order.
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_query_grad_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta, Dims dims) {
  __shared__ float k_tile[kTileFloats], v_tile[kTileFloats], q_rows[kRowFloats], dout_rows[kRowFloats];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int hs = dims.hs, stride = tile_stride(hs);
  const std::int64_t ld = 3 * dims.c;
  const BlockRows blk = block_rows(dims, true);
  const PairOffsets at = pair_offsets(blk.pair, dims);
  const T* q = qkv + at.qkv_at;
  const T* k = q + dims.c;
  const T* v = q + 2 * dims.c;
  const std::int64_t i = blk.first + warp;
  const bool active = warp < blk.rows;
  const float* q_row = q_rows + warp * hs;
  const float* dout_row = dout_rows + warp * hs;
  stage_rows(q_rows, hs, q + blk.first * ld, ld, blk.rows, hs);
  stage_rows(dout_rows, hs, dout + at.out_at + blk.first * dims.c, dims.c, blk.rows, hs);
  const float row_lse = active ? lse[at.stats_at + i] : 0.0f;
  const float row_delta = active ? delta[at.stats_at + i] : 0.0f;

  float dq[kUnits] = {};
  const std::int64_t key_end = blk.first + blk.rows;
  for (std::int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    const int cols = tile_rows(key_end - j0);
    __syncthreads();  // the previous tile has been read
    stage_rows(k_tile, stride, k + j0 * ld, ld, cols, hs);
    stage_rows(v_tile, stride, v + j0 * ld, ld, cols, hs);
    __syncthreads();
    if (!active) continue;
    float ds = 0.0f;
    if (j0 + lane <= i) {
      const float s = dims.scale * head_dot(q_row, k_tile + lane * stride, hs);
      const float p = attention_probability(s, row_lse);
      const float dp = head_dot(dout_row, v_tile + lane * stride, hs);
      ds = attention_score_grad(p, dp, row_delta, dims.scale);
    }
    const std::int64_t seen = i - j0 + 1;  // keys of the tile that query i sees
    accumulate_rows(dq, ds, k_tile, stride, 0, seen < cols ? static_cast<int>(seen) : cols, hs, lane);
  }
  if (!active) return;
  store_head(dqkv + at.qkv_at + i * ld, dq, 1.0f, hs, lane);
}

}  // namespace

template <typename T>
void launch_attention_forward(T* out,        // (b,t,c)
                              float* lse,    // (b,nh,t)
                              const T* qkv,  // (b,t,3c)
                              std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, cudaStream_t stream) {
  const Dims dims = attention_dims(b, t, c, nh, "attention_forward");
  if (b == 0 || t == 0) return;
  attention_forward_kernel<T><<<grid_blocks(dims), kThreadsPerBlock, 0, stream>>>(out, lse, qkv, dims);
  TESSERA_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

template <typename T>
void launch_attention_backward(T* dqkv,           // (b,t,3c) written
                               float* delta,      // (b,nh,t) workspace
                               const T* dout,     // (b,t,c)
                               const T* qkv,      // (b,t,3c)
                               const T* out,      // (b,t,c)
                               const float* lse,  // (b,nh,t)
                               std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, cudaStream_t stream) {
  const Dims dims = attention_dims(b, t, c, nh, "attention_backward");
  if (b == 0 || t == 0) return;
  const auto delta_blocks = static_cast<unsigned>((dims.pairs * t + kRows - 1) / kRows);
  attention_delta_kernel<T><<<delta_blocks, kThreadsPerBlock, 0, stream>>>(delta, dout, out, dims);
  TESSERA_CUDA_CHECK_LAUNCH("attention_delta_kernel");
  attention_key_grad_kernel<T><<<grid_blocks(dims), kThreadsPerBlock, 0, stream>>>(dqkv, dout, qkv, lse, delta, dims);
  TESSERA_CUDA_CHECK_LAUNCH("attention_key_grad_kernel");
  attention_query_grad_kernel<T><<<grid_blocks(dims), kThreadsPerBlock, 0, stream>>>(dqkv, dout, qkv, lse, delta, dims);
  TESSERA_CUDA_CHECK_LAUNCH("attention_query_grad_kernel");
}

#define TESSERA_INSTANTIATE_ATTENTION(T)                                                                           \
  template void launch_attention_forward<T>(T*, float*, const T*, std::int64_t, std::int64_t, std::int64_t,        \
                                            std::int64_t, cudaStream_t);                                           \
  template void launch_attention_backward<T>(T*, float*, const T*, const T*, const T*, const float*, std::int64_t, \
                                             std::int64_t, std::int64_t, std::int64_t, cudaStream_t);
TESSERA_INSTANTIATE_ATTENTION(float)
TESSERA_INSTANTIATE_ATTENTION(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_ATTENTION

}  // namespace tessera::detail
