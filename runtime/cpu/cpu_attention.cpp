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
#include <omp.h>

#include <algorithm>
#include <cmath>

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

}  // namespace

void LevelKernels::attention_forward(float* out,        // (b,t,c)
                                     float* lse,        // (b,nh,t)
                                     const float* qkv,  // (b,t,3c)
                                     std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                     void* /*scratch*/) const {  // none needed
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
    const float* q = qkv + bi * t * ld + h * hs;
    forward_query_block(*this, out + bi * t * c + h * hs, lse + pair * t, q, q + c, q + 2 * c, i0,
                        std::min(kQueryBlock, t - i0), hs, ld, c, scale);
  }
}

void LevelKernels::attention_backward(float* dqkv,        // (b,t,3c) written
                                      float* delta,       // (b,nh,t) workspace
                                      const float* dout,  // (b,t,c)
                                      const float* qkv,   // (b,t,3c)
                                      const float* out,   // (b,t,c)
                                      const float* lse,   // (b,nh,t)
                                      std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      void* /*scratch*/) const {  // none needed
  const std::int64_t hs = attention_head_size(c, nh, "CpuKernels::attention_backward");
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::int64_t pairs = b * nh;
  auto pair_tensors = [&](std::int64_t pair) {
    const std::int64_t bi = pair / nh, h = pair % nh;
    const std::int64_t qkv_at = bi * t * ld + h * hs, out_at = bi * t * c + h * hs;
    float* dq = dqkv + qkv_at;
    return BackwardPair{qkv + qkv_at,
                        qkv + qkv_at + c,
                        qkv + qkv_at + 2 * c,
                        dout + out_at,
                        lse + pair * t,
                        delta + pair * t,
                        dq,
                        dq + c,
                        dq + 2 * c,
                        hs,
                        ld,
                        c,
                        scale};
  };
#pragma omp parallel for schedule(static)
  for (std::int64_t row = 0; row < pairs * t; ++row) {  // delta = rowsum(dout * out), per head
    const std::int64_t pair = row / t, i = row % t;
    const std::int64_t at = (pair / nh * t + i) * c + pair % nh * hs;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t d = 0; d < hs; ++d) sum += dout[at + d] * out[at + d];
    delta[row] = sum;
  }
  const std::int64_t threads = omp_get_max_threads();
  const std::int64_t rounds = (pairs + threads - 1) / threads;
  const double utilisation = pairs == 0 ? 1.0 : static_cast<double>(pairs) / static_cast<double>(rounds * threads);
  const std::int64_t key_blocks = blocks(t, kKeyBlock), query_blocks = blocks(t, kQueryBlock);
  if (utilisation >= kMinPairUtilisation) {
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t pair = 0; pair < pairs; ++pair) {
      BackwardBuffers w;
      backward_pair(*this, pair_tensors(pair), t, w);
    }
    return;
  }
#pragma omp parallel
  {
    BackwardBuffers w;
    // dk, dv: key blocks with the most query blocks (the first ones) first.
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < pairs * key_blocks; ++task) {
      backward_key_block(*this, pair_tensors(task % pairs), t, task / pairs * kKeyBlock, w);
    }
    // dq: query blocks with the most key blocks (the last ones) first.
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < pairs * query_blocks; ++task) {
      backward_query_block(*this, pair_tensors(task % pairs), t, (query_blocks - 1 - task / pairs) * kQueryBlock, w);
    }
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
