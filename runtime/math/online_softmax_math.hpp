// online_softmax_math: the per-row statistics of attention computed one block of keys at a time
// (FlashAttention's online softmax), shared by the CPU kernel and the CUDA kernels (TESSERA_HD), so
// both backends keep and use the same numbers: the running row maximum m and sum l while the
// output is accumulated, then only the log-sum-exp lse = m + log(l) of each row for backward, which
// recomputes every probability as exp(score - lse).
//
// A row whose every score so far is -inf (fully masked) keeps m = -inf and l = 0; its block terms
// are 0 (not exp(-inf - -inf) = NaN), its output 0 and its lse -inf; backward gives it probability
// 0, so no NaN leaves a fully masked row.
//
// Forward, per row, for each block of scores s (already scaled by 1/sqrt(head size)):
//   factor = online_softmax_fold(row, max over the block's visible s)
//   output_so_far *= factor                     (skip when factor == 1)
//   p_j = online_softmax_term(s_j, row.max);  row.sum += sum_j p_j;  output_so_far += p v
// then output /= row.sum (online_softmax_inverse_sum) and lse = online_softmax_lse(row).
// Backward, per row: delta = sum(dout * out); p = attention_probability(s, lse);
// dp = dout . v;  ds = attention_score_grad(p, dp, delta, scale).
#pragma once

#include <cmath>

#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera {

struct OnlineSoftmaxRow {
  float max = -INFINITY;  // the largest score seen so far
  float sum = 0.0f;       // sum of exp(score - max) over the scores seen so far
};

// Folds a block whose largest visible score is `block_max` into `row`: raises row.max when the block
// holds a larger score, rescales row.sum to it, and returns that factor, by which the output
// accumulated so far must be multiplied (1 when the maximum did not change; 0 before any finite
// score, when nothing has been accumulated).
TESSERA_HD float online_softmax_fold(OnlineSoftmaxRow& row, float block_max) {
  if (!(block_max > row.max)) return 1.0f;
  const float factor = row.max == -INFINITY ? 0.0f : softmax_exp(row.max - block_max);
  row.sum *= factor;
  row.max = block_max;
  return factor;
}

// The block term exp(score - max) of a score, max being the row's maximum after the fold; 0 while
// the row is fully masked (max = -inf).
TESSERA_HD float online_softmax_term(float score, float max) {
  return max == -INFINITY ? 0.0f : softmax_exp(score - max);
}

// 1 / row.sum, by which the accumulated output is multiplied at the end; 0 for a fully masked row.
TESSERA_HD float online_softmax_inverse_sum(const OnlineSoftmaxRow& row) {
  return row.sum > 0.0f ? 1.0f / row.sum : 0.0f;
}

// The row's log-sum-exp, all that backward needs of its softmax: -inf for a fully masked row.
TESSERA_HD float online_softmax_lse(const OnlineSoftmaxRow& row) {
  return row.sum > 0.0f ? row.max + logf(row.sum) : -INFINITY;
}

// The probability of a score in a row whose log-sum-exp is `lse` (0 in a fully masked row).
TESSERA_HD float attention_probability(float score, float lse) {
  return lse == -INFINITY ? 0.0f : softmax_exp(score - lse);
}

// The gradient of the (scaled) score from its probability p, the gradient of the probability dp
// (= dout . v) and the row's delta = sum(dout * out): scale * p * (dp - delta).
TESSERA_HD float attention_score_grad(float p, float dp, float delta, float scale) {
  return scale * (p * (dp - delta));
}

}  // namespace tessera
