// CPU causal multi-head self-attention, tiled with an online softmax (FlashAttention's algorithm):
// no (t,t) matrix exists at any time. Per (batch, head) pair, with q, k, v (t,hs) read in place from
// qkv (row stride 3c), the scores are formed one tile of kKeyBlock keys x kQueryBlock queries at a
// time in buffers on the thread's stack (they stay in L1/L2), with the running statistics of
// runtime/math/online_softmax_math.hpp; forward keeps only out and each row's log-sum-exp, and
// backward recomputes every probability tile from q, k and lse:
//
//   forward:   S = scale q k^T;  P = softmax_causal(S) tile by tile;  out = P v;  lse = logsumexp(S)
//   backward:  delta = rowsum(dout * out);  P = exp(S - lse);  dv += P^T dout;  dP = dout v^T;
//              dS = scale P (dP - delta);  dk += dS^T q;  dq += dS k
//
// Layout. A tile is held transposed, one row per key (S^T = k q^T, keys x queries): every product
// then reads its operands as stored or as the transpose of a row-major operand (A^T B), the two
// forms OpenBLAS runs through its small-matrix kernels without packing, once q and dout of the
// query block are transposed on the stack (hs x queries, for heads up to kMaxTransposedHead; larger
// heads use the products' other form, A B^T, which OpenBLAS packs: the same arithmetic, slower).
// The statistics of a query are then a column of the tile, updated with vector loops across it.
//
// Tiles wholly above the diagonal are never formed (half the work); in the tiles the diagonal
// crosses, the masked entries are set to 0. Each tile product is a single-threaded OpenBLAS GEMM
// (OpenBLAS runs a GEMM called inside a parallel region on the calling thread).
//
// Threads and bits. Forward: one task per (pair, query block), each writing its own rows of out
// and lse. Backward: one task per pair (keys outer, every tile of the pair in a fixed order), or,
// when there are too few pairs to keep the threads busy, two passes: per (pair, key block) for dk
// and dv, then per (pair, query block) for dq. Both forms make the same GEMM calls on the same
// tiles and add each gradient's tile products in the same order (dk, dv over query blocks upward,
// dq over key blocks upward), so the bits do not depend on the thread count or on which form ran.
// bf16 tensors run the same f32 tiles on rows widened per task (see forward_task and pair_view).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/attention_head.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/online_softmax_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

// Tile sizes: at head size 64 with OpenBLAS's AVX-512 kernels (bench_attention), 64 x 128 was the
// fastest of 32-128 queries x 64-256 keys at T = 256, 1024 and 4096 together.
// kKeyBlock is a multiple of kQueryBlock, so a key block never starts inside a query block past its
// first row: the masked entries are only the upper triangle of the diagonal query block.
constexpr std::int64_t kQueryBlock = 64;
constexpr std::int64_t kKeyBlock = 128;
static_assert(kKeyBlock % kQueryBlock == 0);
// The largest head whose q and dout blocks are transposed on the stack (2 x 64 KiB at 256).
constexpr std::int64_t kMaxTransposedHead = 256;

// The backward's one-task-per-pair form wastes threads when the pairs do not divide among them;
// below this share of busy thread time, the two-pass form (7 tile products instead of 5, all threads
// busy) is the faster one.
constexpr double kMinPairUtilisation = 0.75;

std::int64_t blocks(std::int64_t t, std::int64_t block) { return (t + block - 1) / block; }

// A tile, keys x queries (row stride kQueryBlock).
struct alignas(64) Tile {
  float v[kKeyBlock * kQueryBlock];
  float* row(std::int64_t key) { return v + key * kQueryBlock; }
};

// A query block's rows of a (t,hs) operand (row stride ld) as the matrix B of a product A B^T: the
// block transposed into `buffer` (hs x rows, row stride kQueryBlock) when the head fits it, else
// the rows in place, read transposed by the GEMM (A B^T).
struct QueryOperand {
  const float* data;
  std::int64_t ld;
  bool transposed_in_place;  // true: the GEMM reads `data` (rows x hs) transposed
};

struct alignas(64) TransposedBlock {
  float v[kMaxTransposedHead * kQueryBlock];
};

QueryOperand query_operand(const float* rows_data, std::int64_t ld, std::int64_t rows, std::int64_t hs,
                           TransposedBlock& buffer) {
  if (hs > kMaxTransposedHead) return {rows_data, ld, true};
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* src = rows_data + r * ld;
    for (std::int64_t d = 0; d < hs; ++d) buffer.v[d * kQueryBlock + r] = src[d];
  }
  return {buffer.v, kQueryBlock, false};
}

// tile (cols x rows) = alpha * keys (cols x hs, row stride ld) @ query block^T (hs x rows).
void key_query_product(const LevelKernels& kernels, std::int64_t cols, std::int64_t rows, std::int64_t hs, float alpha,
                       const float* keys, std::int64_t ld, const QueryOperand& q, Tile& tile) {
  kernels.gemm(false, q.transposed_in_place, cols, rows, hs, alpha, keys, ld, q.data, q.ld, 0.0f, tile.v, kQueryBlock);
}

// The first query (offset in the block at i0, 0..rows) that sees key j (causal: query i sees j <= i).
std::int64_t first_seeing_query(std::int64_t j, std::int64_t i0, std::int64_t rows) {
  return std::clamp<std::int64_t>(j - i0, 0, rows);
}

// The forward of one query block [i0, i0 + rows) of one pair. q, k, v: (t,hs) with row stride ld;
// o: (t,hs) with row stride c; lse: (t).
void forward_query_block(const LevelKernels& kernels, float* o, float* lse, const float* q, const float* k,
                         const float* v, std::int64_t i0, std::int64_t rows, std::int64_t hs, std::int64_t ld,
                         std::int64_t c, float scale) {
  TransposedBlock qt_buffer;
  const QueryOperand qt = query_operand(q + i0 * ld, ld, rows, hs, qt_buffer);
  Tile st;
  OnlineSoftmaxRow stats[kQueryBlock];
  float block_max[kQueryBlock], factor[kQueryBlock], max[kQueryBlock], sum[kQueryBlock];
  const std::int64_t key_end = i0 + rows;  // keys past the block's last query are masked for all of it
  for (std::int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const std::int64_t cols = std::min(kKeyBlock, key_end - j0);
    key_query_product(kernels, cols, rows, hs, scale, k + j0 * ld, ld, qt, st);
    std::fill(block_max, block_max + rows, -INFINITY);
    for (std::int64_t jj = 0; jj < cols; ++jj) {
      const float* s = st.row(jj);
#pragma omp simd
      for (std::int64_t r = first_seeing_query(j0 + jj, i0, rows); r < rows; ++r) {
        block_max[r] = s[r] > block_max[r] ? s[r] : block_max[r];
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      factor[r] = online_softmax_fold(stats[r], block_max[r]);
      max[r] = stats[r].max;
      sum[r] = 0.0f;
    }
    for (std::int64_t jj = 0; jj < cols; ++jj) {
      float* s = st.row(jj);
      const std::int64_t first = first_seeing_query(j0 + jj, i0, rows);
      std::fill(s, s + first, 0.0f);
#pragma omp simd
      for (std::int64_t r = first; r < rows; ++r) {
        const float p = online_softmax_term(s[r], max[r]);
        s[r] = p;
        sum[r] += p;
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      stats[r].sum += sum[r];
      if (j0 > 0 && factor[r] != 1.0f) {  // the output so far, to the new maximum
        float* out_row = o + (i0 + r) * c;
#pragma omp simd
        for (std::int64_t d = 0; d < hs; ++d) out_row[d] *= factor[r];
      }
    }
    // out (rows x hs) += P v = (P^T)^T v
    kernels.gemm(true, false, rows, hs, cols, 1.0f, st.v, kQueryBlock, v + j0 * ld, ld, j0 == 0 ? 0.0f : 1.0f,
                 o + i0 * c, c);
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const float inv = online_softmax_inverse_sum(stats[r]);
    float* out_row = o + (i0 + r) * c;
#pragma omp simd
    for (std::int64_t d = 0; d < hs; ++d) out_row[d] *= inv;
    lse[i0 + r] = online_softmax_lse(stats[r]);
  }
}

// One pair's tensors for backward: inputs q, k, v (row stride ld), dout (row stride c), lse and
// delta (t); outputs dq, dk, dv (row stride ld).
struct BackwardPair {
  const float *q, *k, *v, *dout, *lse, *delta;
  float *dq, *dk, *dv;
  std::int64_t hs, ld, c;
  float scale;
};

// A thread's buffers for backward: P^T and dS^T of a tile (keys x queries), and the current query
// block's q and dout transposed with the operands that read them.
struct BackwardBuffers {
  Tile pt, dst;
  TransposedBlock qt_buffer, doutt_buffer;
  QueryOperand qt, doutt;
  const float* loaded = nullptr;  // the first q row of the query block the operands hold
};

// Makes w's operands those of query block [i0, i0+rows) (transposing only when it changes).
void load_query_block(const BackwardPair& a, std::int64_t i0, std::int64_t rows, BackwardBuffers& w) {
  if (w.loaded == a.q + i0 * a.ld) return;
  w.qt = query_operand(a.q + i0 * a.ld, a.ld, rows, a.hs, w.qt_buffer);
  w.doutt = query_operand(a.dout + i0 * a.c, a.c, rows, a.hs, w.doutt_buffer);
  w.loaded = a.q + i0 * a.ld;
}

// Keys [j0, j0+cols) of the key block that the query block [i0, i0+rows) sees: up to its last row.
std::int64_t seen_keys(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols) {
  return std::min(cols, i0 + rows - j0);
}

// The tile (query block [i0, i0+rows), keys [j0, j0+cols) that it sees) of backward, with the query
// block loaded into w:
//   S^T = scale k q^T;  P^T = exp(S^T - lse);  dP^T = v dout^T;  dS^T = scale P^T (dP^T - delta)
// then with `keys`: dv += P^T dout, dk += dS^T q (their rows zeroed before a key block's first
// tile); with `queries`: dq += (dS^T)^T k (the first tile of a query block, j0 = 0, writes it).
void backward_tile(const LevelKernels& kernels, const BackwardPair& a, std::int64_t i0, std::int64_t rows,
                   std::int64_t j0, std::int64_t cols, bool keys, bool queries, BackwardBuffers& w) {
  const float* lse = a.lse + i0;
  const float* delta = a.delta + i0;
  key_query_product(kernels, cols, rows, a.hs, a.scale, a.k + j0 * a.ld, a.ld, w.qt, w.pt);
  key_query_product(kernels, cols, rows, a.hs, 1.0f, a.v + j0 * a.ld, a.ld, w.doutt, w.dst);
  for (std::int64_t jj = 0; jj < cols; ++jj) {
    const std::int64_t first = first_seeing_query(j0 + jj, i0, rows);
    float* pt = w.pt.row(jj);
    float* dst = w.dst.row(jj);
    std::fill(pt, pt + first, 0.0f);
    std::fill(dst, dst + first, 0.0f);
#pragma omp simd
    for (std::int64_t r = first; r < rows; ++r) {
      const float p = attention_probability(pt[r], lse[r]);
      pt[r] = p;
      dst[r] = attention_score_grad(p, dst[r], delta[r], a.scale);
    }
  }
  if (keys) {
    kernels.gemm(false, false, cols, a.hs, rows, 1.0f, w.pt.v, kQueryBlock, a.dout + i0 * a.c, a.c, 1.0f,
                 a.dv + j0 * a.ld, a.ld);
    kernels.gemm(false, false, cols, a.hs, rows, 1.0f, w.dst.v, kQueryBlock, a.q + i0 * a.ld, a.ld, 1.0f,
                 a.dk + j0 * a.ld, a.ld);
  }
  if (queries) {
    kernels.gemm(true, false, rows, a.hs, cols, 1.0f, w.dst.v, kQueryBlock, a.k + j0 * a.ld, a.ld,
                 j0 == 0 ? 0.0f : 1.0f, a.dq + i0 * a.ld, a.ld);
  }
}

// Zeroes the dk and dv rows of keys [j0, j0+cols), which the tiles then accumulate into.
void zero_key_gradients(const BackwardPair& a, std::int64_t j0, std::int64_t cols) {
  for (std::int64_t j = j0; j < j0 + cols; ++j) {
    std::fill(a.dk + j * a.ld, a.dk + j * a.ld + a.hs, 0.0f);
    std::fill(a.dv + j * a.ld, a.dv + j * a.ld + a.hs, 0.0f);
  }
}

// The whole backward of one pair, query blocks outer (each transposed once), key blocks inner.
void backward_pair(const LevelKernels& kernels, const BackwardPair& a, std::int64_t t, BackwardBuffers& w) {
  for (std::int64_t j0 = 0; j0 < t; j0 += kKeyBlock) zero_key_gradients(a, j0, std::min(kKeyBlock, t - j0));
  for (std::int64_t i0 = 0; i0 < t; i0 += kQueryBlock) {
    const std::int64_t rows = std::min(kQueryBlock, t - i0);
    load_query_block(a, i0, rows, w);
    for (std::int64_t j0 = 0; j0 < i0 + rows; j0 += kKeyBlock) {
      backward_tile(kernels, a, i0, rows, j0, seen_keys(i0, rows, j0, std::min(kKeyBlock, t - j0)), true, true, w);
    }
  }
}

// dk, dv of key block [j0, j0+cols): every query block from the one holding j0 to the end.
void backward_key_block(const LevelKernels& kernels, const BackwardPair& a, std::int64_t t, std::int64_t j0,
                        BackwardBuffers& w) {
  const std::int64_t cols = std::min(kKeyBlock, t - j0);
  zero_key_gradients(a, j0, cols);
  for (std::int64_t i0 = j0 / kQueryBlock * kQueryBlock; i0 < t; i0 += kQueryBlock) {
    const std::int64_t rows = std::min(kQueryBlock, t - i0);
    load_query_block(a, i0, rows, w);
    backward_tile(kernels, a, i0, rows, j0, seen_keys(i0, rows, j0, cols), true, false, w);
  }
}

// dq of query block [i0, i0+rows): every key block up to the block's last row.
void backward_query_block(const LevelKernels& kernels, const BackwardPair& a, std::int64_t t, std::int64_t i0,
                          BackwardBuffers& w) {
  const std::int64_t rows = std::min(kQueryBlock, t - i0);
  load_query_block(a, i0, rows, w);
  for (std::int64_t j0 = 0; j0 < i0 + rows; j0 += kKeyBlock) {
    backward_tile(kernels, a, i0, rows, j0, seen_keys(i0, rows, j0, std::min(kKeyBlock, t - j0)), false, true, w);
  }
}

// bf16 tensors: each task widens the rows of its (batch, head) pair that it reads into f32 buffers
// of its thread (row stride hs), runs the f32 tile code on them, and rounds the rows it owns into
// the bf16 outputs; the lse and delta rows are f32 as for f32 tensors.
struct PairBuffers {
  std::vector<float> q, k, v, dout, out, dq, dk, dv;
};

PairBuffers& pair_buffers() {
  thread_local PairBuffers buffers;
  return buffers;
}

// dst (rows x hs) = the rows [r0, r0 + rows) of a (t,hs) operand of row stride ld, widened, at dst + r0 * hs.
void widen_rows(std::vector<float>& dst, const Bf16* src, std::int64_t ld, std::int64_t r0, std::int64_t rows,
                std::int64_t t, std::int64_t hs) {
  dst.resize(static_cast<std::size_t>(t * hs));
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    const Bf16* in = src + r * ld;
    float* out = dst.data() + r * hs;
#pragma omp simd
    for (std::int64_t d = 0; d < hs; ++d) out[d] = to_f32(in[d]);
  }
}

// The rows [r0, r0 + rows) of src (row stride hs) rounded into dst (row stride ld).
void narrow_rows(Bf16* dst, std::int64_t ld, const float* src, std::int64_t r0, std::int64_t rows, std::int64_t hs) {
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    const float* in = src + r * hs;
    Bf16* out = dst + r * ld;
#pragma omp simd
    for (std::int64_t d = 0; d < hs; ++d) out[d] = from_f32<Bf16>(in[d]);
  }
}

// The forward of query block [i0, i0 + rows) of one pair whose q, k, v start at q, q + c, q + 2c
// (row stride ld = 3c) and whose output rows start at o (row stride c).
void forward_task(const LevelKernels& kernels, float* o, float* lse, const float* q, std::int64_t i0,
                  std::int64_t rows, std::int64_t /*t*/, std::int64_t hs, std::int64_t ld, std::int64_t c,
                  float scale) {
  forward_query_block(kernels, o, lse, q, q + c, q + 2 * c, i0, rows, hs, ld, c, scale);
}

void forward_task(const LevelKernels& kernels, Bf16* o, float* lse, const Bf16* q, std::int64_t i0, std::int64_t rows,
                  std::int64_t t, std::int64_t hs, std::int64_t ld, std::int64_t c, float scale) {
  PairBuffers& w = pair_buffers();
  const std::int64_t keys = i0 + rows;
  widen_rows(w.q, q, ld, i0, rows, t, hs);
  widen_rows(w.k, q + c, ld, 0, keys, t, hs);
  widen_rows(w.v, q + 2 * c, ld, 0, keys, t, hs);
  w.out.resize(static_cast<std::size_t>(t * hs));
  forward_query_block(kernels, w.out.data(), lse, w.q.data(), w.k.data(), w.v.data(), i0, rows, hs, hs, hs, scale);
  narrow_rows(o, c, w.out.data(), i0, rows, hs);
}

// delta (pairs * t) = rowsum(dout * out) per head, in f32.
template <typename T>
void attention_delta(float* delta, const T* dout, const T* out, std::int64_t pairs, std::int64_t t, std::int64_t nh,
                     std::int64_t hs, std::int64_t c) {
#pragma omp parallel for schedule(static)
  for (std::int64_t row = 0; row < pairs * t; ++row) {  // delta = rowsum(dout * out), per head
    const std::int64_t pair = row / t, i = row % t;
    const std::int64_t at = (pair / nh * t + i) * c + pair % nh * hs;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t d = 0; d < hs; ++d) sum += to_f32(dout[at + d]) * to_f32(out[at + d]);
    delta[row] = sum;
  }
}

// A pair's backward operands as stored (f32), or widened into the thread's buffers (bf16) with
// the bf16 gradients the buffers' rows are rounded into (dq, dk, dv, row stride ld).
struct PairView {
  BackwardPair a;
  Bf16 *dq = nullptr, *dk = nullptr, *dv = nullptr;
  std::int64_t ld = 0;
};

PairView pair_view(const BackwardPair& stored, std::int64_t, BackwardBuffers&) { return {stored}; }

PairView pair_view(const Bf16* q, const Bf16* dout, const float* lse, const float* delta, Bf16* dq, std::int64_t t,
                   std::int64_t hs, std::int64_t ld, std::int64_t c, float scale, BackwardBuffers& w) {
  PairBuffers& p = pair_buffers();
  widen_rows(p.q, q, ld, 0, t, t, hs);
  widen_rows(p.k, q + c, ld, 0, t, t, hs);
  widen_rows(p.v, q + 2 * c, ld, 0, t, t, hs);
  widen_rows(p.dout, dout, c, 0, t, t, hs);
  for (std::vector<float>* g : {&p.dq, &p.dk, &p.dv}) g->resize(static_cast<std::size_t>(t * hs));
  w.loaded = nullptr;  // the buffers now hold another pair's rows
  PairView view{BackwardPair{p.q.data(), p.k.data(), p.v.data(), p.dout.data(), lse, delta, p.dq.data(), p.dk.data(),
                             p.dv.data(), hs, hs, hs, scale}};
  view.dq = dq;
  view.dk = dq + c;
  view.dv = dq + 2 * c;
  view.ld = ld;
  return view;
}

}  // namespace

namespace {

template <typename T>
void attention_forward_t(const LevelKernels& kernels, T* out, float* lse, const T* qkv, std::int64_t b, std::int64_t t,
                         std::int64_t c, std::int64_t nh) {
  const std::int64_t hs = attention_head_size(c, nh, "CpuKernels::attention_forward");
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t pairs = b * nh, query_blocks = blocks(t, kQueryBlock);
  // Tasks with the most keys (the last query blocks) first, so the short ones fill in at the end.
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t task = 0; task < pairs * query_blocks; ++task) {
    const std::int64_t pair = task % pairs;
    const std::int64_t i0 = (query_blocks - 1 - task / pairs) * kQueryBlock;
    const std::int64_t bi = pair / nh, h = pair % nh;
    forward_task(kernels, out + bi * t * c + h * hs, lse + pair * t, qkv + bi * t * ld + h * hs, i0,
                 std::min(kQueryBlock, t - i0), t, hs, ld, c, scale);
  }
}

template <typename T>
void attention_backward_t(const LevelKernels& kernels, T* dqkv, float* delta, const T* dout, const T* qkv,
                          const T* out, const float* lse, std::int64_t b, std::int64_t t, std::int64_t c,
                          std::int64_t nh) {
  const std::int64_t hs = attention_head_size(c, nh, "CpuKernels::attention_backward");
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t pairs = b * nh;
  // The pair's tensors: in place (f32), or widened into the thread's buffers (bf16).
  auto pair_tensors = [&](std::int64_t pair, BackwardBuffers& w) {
    const std::int64_t bi = pair / nh, h = pair % nh;
    const std::int64_t qkv_at = bi * t * ld + h * hs, out_at = bi * t * c + h * hs;
    T* dq = dqkv + qkv_at;
    if constexpr (std::is_same_v<T, float>) {
      return pair_view(BackwardPair{qkv + qkv_at, qkv + qkv_at + c, qkv + qkv_at + 2 * c, dout + out_at,
                                    lse + pair * t, delta + pair * t, dq, dq + c, dq + 2 * c, hs, ld, c, scale},
                       t, w);
    } else {
      return pair_view(qkv + qkv_at, dout + out_at, lse + pair * t, delta + pair * t, dq, t, hs, ld, c, scale, w);
    }
  };
  // bf16: the rows [r0, r0 + rows) of dq (queries) or of dk and dv rounded into dqkv.
  auto round_rows = [&](const PairView& view, bool queries, std::int64_t r0, std::int64_t rows) {
    if constexpr (!std::is_same_v<T, float>) {
      if (queries) {
        narrow_rows(view.dq, view.ld, view.a.dq, r0, rows, hs);
      } else {
        narrow_rows(view.dk, view.ld, view.a.dk, r0, rows, hs);
        narrow_rows(view.dv, view.ld, view.a.dv, r0, rows, hs);
      }
    }
  };
  attention_delta(delta, dout, out, pairs, t, nh, hs, c);
  const std::int64_t threads = omp_get_max_threads();
  const std::int64_t rounds = (pairs + threads - 1) / threads;
  const double utilisation = pairs == 0 ? 1.0 : static_cast<double>(pairs) / static_cast<double>(rounds * threads);
  const std::int64_t key_blocks = blocks(t, kKeyBlock), query_blocks = blocks(t, kQueryBlock);
  if (utilisation >= kMinPairUtilisation) {
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t pair = 0; pair < pairs; ++pair) {
      BackwardBuffers w;
      const PairView view = pair_tensors(pair, w);
      backward_pair(kernels, view.a, t, w);
      round_rows(view, true, 0, t);
      round_rows(view, false, 0, t);
    }
    return;
  }
#pragma omp parallel
  {
    BackwardBuffers w;
    // dk, dv: key blocks with the most query blocks (the first ones) first.
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < pairs * key_blocks; ++task) {
      const PairView view = pair_tensors(task % pairs, w);
      const std::int64_t j0 = task / pairs * kKeyBlock;
      backward_key_block(kernels, view.a, t, j0, w);
      round_rows(view, false, j0, std::min(kKeyBlock, t - j0));
    }
    // dq: query blocks with the most key blocks (the last ones) first.
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < pairs * query_blocks; ++task) {
      const PairView view = pair_tensors(task % pairs, w);
      const std::int64_t i0 = (query_blocks - 1 - task / pairs) * kQueryBlock;
      backward_query_block(kernels, view.a, t, i0, w);
      round_rows(view, true, i0, std::min(kQueryBlock, t - i0));
    }
  }
}

}  // namespace

void LevelKernels::attention_forward(float* out,        // (b,t,c)
                                     float* lse,        // (b,nh,t)
                                     const float* qkv,  // (b,t,3c)
                                     std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                     void* /*scratch*/) const {  // none needed
  attention_forward_t(*this, out, lse, qkv, b, t, c, nh);
}
void LevelKernels::attention_forward(Bf16* out, float* lse, const Bf16* qkv, std::int64_t b, std::int64_t t,
                                     std::int64_t c, std::int64_t nh, void* /*scratch*/) const {
  attention_forward_t(*this, out, lse, qkv, b, t, c, nh);
}

void LevelKernels::attention_backward(float* dqkv,        // (b,t,3c) written
                                      float* delta,       // (b,nh,t) workspace
                                      const float* dout,  // (b,t,c)
                                      const float* qkv,   // (b,t,3c)
                                      const float* out,   // (b,t,c)
                                      const float* lse,   // (b,nh,t)
                                      std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      void* /*scratch*/) const {  // none needed
  attention_backward_t(*this, dqkv, delta, dout, qkv, out, lse, b, t, c, nh);
}
void LevelKernels::attention_backward(Bf16* dqkv, float* delta, const Bf16* dout, const Bf16* qkv, const Bf16* out,
                                      const float* lse, std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      void* /*scratch*/) const {
  attention_backward_t(*this, dqkv, delta, dout, qkv, out, lse, b, t, c, nh);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
