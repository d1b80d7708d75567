// The T x T attention that the tiled kernels replaced, as a test reference: per (batch, head) pair
// the whole (t,t) probability matrix P = softmax_causal(scale q k^T) in f32 through the same GEMM,
// out = P v, and backward from P: dP = dout v^T, dv = P^T dout, dS = scale P (dP - rowsum(P dP)),
// dq = dS k, dk = dS^T q. The tiled kernels are held to it within the f32 tolerance.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::test {

struct AttnShape {
  std::int64_t b, t, c, nh;
  std::int64_t hs() const { return c / nh; }
};

struct DenseAttention {
  std::vector<float> out;   // (b,t,c)
  std::vector<float> dqkv;  // (b,t,3c), from dout
};

inline DenseAttention dense_attention(const std::vector<float>& qkv, const std::vector<float>& dout,
                                      const AttnShape& s) {
  const CpuKernels k;
  const std::int64_t hs = s.hs(), ld = 3 * s.c, t = s.t;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  DenseAttention r{std::vector<float>(s.b * t * s.c), std::vector<float>(qkv.size())};
  std::vector<float> p(t * t), ds(t * t);
  for (std::int64_t pair = 0; pair < s.b * s.nh; ++pair) {
    const std::int64_t bi = pair / s.nh, h = pair % s.nh;
    const float* q = qkv.data() + bi * t * ld + h * hs;
    const float* kk = q + s.c;
    const float* v = q + 2 * s.c;
    float* o = r.out.data() + bi * t * s.c + h * hs;
    const float* d_o = dout.data() + bi * t * s.c + h * hs;
    float* dq = r.dqkv.data() + bi * t * ld + h * hs;
    k.gemm(false, true, t, t, hs, scale, q, ld, kk, ld, 0.0f, p.data(), t);
    for (std::int64_t i = 0; i < t; ++i) {
      float* row = p.data() + i * t;
      float max_val = row[0];
      for (std::int64_t j = 0; j <= i; ++j) max_val = std::fmax(max_val, row[j]);
      float sum = 0.0f;
      for (std::int64_t j = 0; j <= i; ++j) sum += (row[j] = fast_expf(row[j] - max_val));
      for (std::int64_t j = 0; j < t; ++j) row[j] = j <= i ? row[j] / sum : 0.0f;
    }
    k.gemm(false, false, t, hs, t, 1.0f, p.data(), t, v, ld, 0.0f, o, s.c);
    k.gemm(false, true, t, t, hs, 1.0f, d_o, s.c, v, ld, 0.0f, ds.data(), t);
    k.gemm(true, false, t, hs, t, 1.0f, p.data(), t, d_o, s.c, 0.0f, dq + 2 * s.c, ld);
    for (std::int64_t i = 0; i < t; ++i) {
      float dot = 0.0f;
      for (std::int64_t j = 0; j <= i; ++j) dot += p[i * t + j] * ds[i * t + j];
      for (std::int64_t j = 0; j < t; ++j) ds[i * t + j] = j <= i ? scale * p[i * t + j] * (ds[i * t + j] - dot) : 0.0f;
    }
    k.gemm(false, false, t, hs, t, 1.0f, ds.data(), t, kk, ld, 0.0f, dq, ld);
    k.gemm(true, false, t, hs, t, 1.0f, ds.data(), t, q, ld, 0.0f, dq + s.c, ld);
  }
  return r;
}

}  // namespace tessera::test
