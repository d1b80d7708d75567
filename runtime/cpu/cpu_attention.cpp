// CPU causal multi-head self-attention with GEMMs, one (batch, head) pair per OpenMP iteration.
// OpenBLAS (OpenMP build) runs a GEMM called inside a parallel region on the calling thread, so the
// pairs run side by side with single-threaded GEMMs.
//
// Per pair, with q, k, v (t,hs) read in place from qkv (row stride 3c) and P = probs (t,t):
//   forward:  P = softmax_causal(scale * q k^T);  out = P v
//   backward: dP = dout v^T;  dv = P^T dout;  dS = scale * P * (dP - rowsum(P * dP));
//             dq = dS k;  dk = dS^T q
// Every product is split into blocks of kBlock rows (or columns) so the GEMMs skip the blocks that
// lie wholly above the diagonal (P and dS are 0 there); entries above the diagonal inside a diagonal
// block are computed and then masked. (At T=256, 64-row blocks ran 20-30% faster than whole-matrix
// GEMMs and slightly faster than 32 or 128.)
#include <cmath>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kBlock = 64;

std::int64_t block_len(std::int64_t start, std::int64_t t) { return t - start < kBlock ? t - start : kBlock; }

std::int64_t head_size(std::int64_t c, std::int64_t nh, const char* where) {
  if (nh <= 0 || c % nh != 0) {
    throw std::invalid_argument(std::string(where) + ": channels " + std::to_string(c) +
                                " are not divisible by the number of heads " + std::to_string(nh) +
                                "; choose n_head so that n_embd % n_head == 0");
  }
  return c / nh;
}

// Row i of the scores (t) becomes softmax over [0, i]; entries after i become 0.
void causal_softmax_row(float* row, std::int64_t i, std::int64_t t) {
  float max_val = row[0];
#pragma omp simd reduction(max : max_val)
  for (std::int64_t j = 0; j <= i; ++j) max_val = row[j] > max_val ? row[j] : max_val;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j <= i; ++j) {
    const float e = fast_expf(row[j] - max_val);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (std::int64_t j = 0; j <= i; ++j) row[j] *= inv;
  for (std::int64_t j = i + 1; j < t; ++j) row[j] = 0.0f;
}

// Row i of dP (t) becomes dS = scale * P * (dP - sum(P * dP)) over [0, i]; entries after i become 0.
void causal_softmax_backward_row(float* ds, const float* p, std::int64_t i, std::int64_t t, float scale) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (std::int64_t j = 0; j <= i; ++j) dot += p[j] * ds[j];
#pragma omp simd
  for (std::int64_t j = 0; j <= i; ++j) ds[j] = scale * p[j] * (ds[j] - dot);
  for (std::int64_t j = i + 1; j < t; ++j) ds[j] = 0.0f;
}

}  // namespace

void CpuKernels::attention_forward(float* out,        // (b,t,c)
                                   float* probs,      // (b,nh,t,t)
                                   const float* qkv,  // (b,t,3c)
                                   std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) const {
  const std::int64_t hs = head_size(c, nh, "CpuKernels::attention_forward");
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for schedule(dynamic, 1) if (b * nh > 1)
  for (std::int64_t pair = 0; pair < b * nh; ++pair) {
    const std::int64_t bi = pair / nh;
    const std::int64_t h = pair % nh;
    const float* q = qkv + bi * t * ld + h * hs;
    const float* k = q + c;
    const float* v = q + 2 * c;
    float* p = probs + pair * t * t;
    float* o = out + bi * t * c + h * hs;
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {  // scores, blocks on or below the diagonal
      const std::int64_t rows = block_len(i0, t);
      gemm(false, true, rows, i0 + rows, hs, scale, q + i0 * ld, ld, k, ld, 0.0f, p + i0 * t, t);
    }
    for (std::int64_t i = 0; i < t; ++i) causal_softmax_row(p + i * t, i, t);
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {  // out = P v
      const std::int64_t rows = block_len(i0, t);
      gemm(false, false, rows, hs, i0 + rows, 1.0f, p + i0 * t, t, v, ld, 0.0f, o + i0 * c, c);
    }
  }
}

void CpuKernels::attention_backward(float* dqkv,         // (b,t,3c) written
                                    float* scratch,      // (b,nh,t,t) workspace
                                    const float* dout,   // (b,t,c)
                                    const float* qkv,    // (b,t,3c)
                                    const float* probs,  // (b,nh,t,t)
                                    std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) const {
  const std::int64_t hs = head_size(c, nh, "CpuKernels::attention_backward");
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for schedule(dynamic, 1) if (b * nh > 1)
  for (std::int64_t pair = 0; pair < b * nh; ++pair) {
    const std::int64_t bi = pair / nh;
    const std::int64_t h = pair % nh;
    const float* q = qkv + bi * t * ld + h * hs;
    const float* k = q + c;
    const float* v = q + 2 * c;
    float* dq = dqkv + bi * t * ld + h * hs;
    float* dk = dq + c;
    float* dv = dq + 2 * c;
    const float* p = probs + pair * t * t;
    const float* d_o = dout + bi * t * c + h * hs;
    float* ds = scratch + pair * t * t;
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
      const std::int64_t rows = block_len(i0, t);
      // dP rows [i0, i0+rows) = dout v^T, columns up to the diagonal block
      gemm(false, true, rows, i0 + rows, hs, 1.0f, d_o + i0 * c, c, v, ld, 0.0f, ds + i0 * t, t);
      // dv rows [i0, i0+rows) = P[i0:, i0:i0+rows]^T dout[i0:]  (P is 0 above the diagonal)
      gemm(true, false, rows, hs, t - i0, 1.0f, p + i0 * t + i0, t, d_o + i0 * c, c, 0.0f, dv + i0 * ld, ld);
    }
    for (std::int64_t i = 0; i < t; ++i) causal_softmax_backward_row(ds + i * t, p + i * t, i, t, scale);
    for (std::int64_t i0 = 0; i0 < t; i0 += kBlock) {
      const std::int64_t rows = block_len(i0, t);
      // dq rows [i0, i0+rows) = dS[i0:i0+rows, :i0+rows] k
      gemm(false, false, rows, hs, i0 + rows, 1.0f, ds + i0 * t, t, k, ld, 0.0f, dq + i0 * ld, ld);
      // dk rows [i0, i0+rows) = dS[i0:, i0:i0+rows]^T q[i0:]
      gemm(true, false, rows, hs, t - i0, 1.0f, ds + i0 * t + i0, t, q + i0 * ld, ld, 0.0f, dk + i0 * ld, ld);
    }
  }
}

}  // namespace tessera
