// lse_combine_math: the log-sum-exp of a row from the log-sum-exps of its parts — the vocabulary-
// sharded cross-entropy's combine (each tensor-parallel rank holds some of a row's logits and its
// lse), as a TESSERA_HD function the CPU loop and the CUDA kernel share.
//
//   lse = m + log(sum_p exp(part_p - m)),  m = max_p part_p,  summed in p order in f32
//
// exp is softmax_exp (exp_math.hpp), the cross-entropy's; a part of -inf (a shard with no logits,
// or all of them -inf) adds exactly 0, and a row whose parts are all -inf gives -inf, as
// cross_entropy_forward's lse of such a row. One part is returned as it is, bit for bit. A NaN part
// gives NaN.
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera {

// parts[p * stride] for p in [0, count), count >= 1.
TESSERA_HD float combine_log_sum_exp(const float* parts, std::int64_t stride, std::int64_t count) {
  if (count == 1) return parts[0];
  float m = -INFINITY;
  bool nan = false;
  for (std::int64_t p = 0; p < count; ++p) {
    const float x = parts[p * stride];
    nan = nan || x != x;
    m = x > m ? x : m;
  }
  if (nan) return NAN;
  if (m == -INFINITY) return -INFINITY;
  float sum = 0.0f;
  for (std::int64_t p = 0; p < count; ++p) {
    const float x = parts[p * stride];
    sum += x == -INFINITY ? 0.0f : softmax_exp(x - m);
  }
  return m + logf(sum);
}

}  // namespace tessera
