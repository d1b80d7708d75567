// CPU fused softmax + cross-entropy, parallel over rows. The forward subtracts the row maximum before
// exponentiating (no overflow for any finite logits) and keeps logsumexp per row, so the backward
// recomputes softmax = exp(logit - lse) without a second reduction and can overwrite the logits.
#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/cpu/cpu_kernels.hpp"
#include "runtime/kernels/exp_math.hpp"

namespace tessera {
namespace {

void check_targets(const std::int32_t* targets, std::int64_t n, std::int64_t v, const char* where) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (targets[i] < 0 || targets[i] >= v) {
      throw std::out_of_range(std::string(where) + ": target[" + std::to_string(i) + "] = " +
                              std::to_string(targets[i]) + " is outside the vocabulary [0, " + std::to_string(v) +
                              "); check the data's token ids against the model's vocab size");
    }
  }
}

}  // namespace

void CpuKernels::cross_entropy_forward(float* losses,                // (n)
                                       float* lse,                   // (n)
                                       const float* logits,          // (n,v)
                                       const std::int32_t* targets,  // (n)
                                       std::int64_t n, std::int64_t v) const {
  check_targets(targets, n, v, "CpuKernels::cross_entropy_forward");
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    float max_val = row[0];
#pragma omp simd reduction(max : max_val)
    for (std::int64_t j = 0; j < v; ++j) max_val = row[j] > max_val ? row[j] : max_val;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < v; ++j) sum += fast_expf(row[j] - max_val);
    const float row_lse = max_val + std::log(sum);
    lse[i] = row_lse;
    losses[i] = row_lse - row[targets[i]];
  }
}

void CpuKernels::cross_entropy_backward(float* dlogits,               // (n,v) written; may alias logits
                                        const float* logits,          // (n,v)
                                        const float* lse,             // (n)
                                        const std::int32_t* targets,  // (n)
                                        float dloss, std::int64_t n, std::int64_t v) const {
  check_targets(targets, n, v, "CpuKernels::cross_entropy_backward");
#pragma omp parallel for schedule(static) if (n * v > (1 << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    float* drow = dlogits + i * v;
    const float row_lse = lse[i];
#pragma omp simd
    for (std::int64_t j = 0; j < v; ++j) drow[j] = fast_expf(row[j] - row_lse) * dloss;
    drow[targets[i]] -= dloss;
  }
}

}  // namespace tessera
