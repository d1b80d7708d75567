// CpuKernels fused softmax + cross-entropy: losses and logsumexp against a double reference
// (including logits large enough to overflow a naive exp, and rows of several online-softmax
// blocks whose maximum comes early, late or in the tail), dlogits by finite differences of
// dloss * sum(losses), an in-place backward equal to the out-of-place one, the same bits on 1 and 2
// threads and at any row address, and targets outside the vocabulary refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::kForwardTol;
using test::kGradTol;
using test::expect_bit_equal;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;


void ce_reference(const std::vector<double>& logits, const std::vector<std::int32_t>& targets, std::int64_t n,
                  std::int64_t v, std::vector<double>* losses, std::vector<double>* lse) {
  losses->assign(n, 0.0);
  lse->assign(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    double max_val = logits[i * v];
    for (std::int64_t j = 1; j < v; ++j) max_val = std::fmax(max_val, logits[i * v + j]);
    double sum = 0.0;
    for (std::int64_t j = 0; j < v; ++j) sum += std::exp(logits[i * v + j] - max_val);
    (*lse)[i] = max_val + std::log(sum);
    (*losses)[i] = (*lse)[i] - logits[i * v + targets[i]];
  }
}

TEST(CpuCrossEntropy, ForwardMatchesReferenceForSmallAndLargeLogits) {
  CpuKernels k;
  const std::int64_t n = 4, v = 37;
  auto logits = random_floats(n * v, 1, -4.0f, 4.0f);
  for (std::int64_t j = 0; j < v; ++j) logits[2 * v + j] += 1000.0f;  // exp would overflow without max-shift
  for (std::int64_t j = 0; j < v; ++j) logits[3 * v + j] -= 1000.0f;  // and underflow to 0
  const std::vector<std::int32_t> targets = {0, 36, 5, 17};
  std::vector<float> losses(n), lse(n);
  k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
  std::vector<double> ref_losses, ref_lse;
  ce_reference(to_double(logits), targets, n, v, &ref_losses, &ref_lse);
  expect_close(losses, ref_losses, kForwardTol, "cross-entropy losses");
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(lse[i], ref_lse[i], 1e-5 * std::fabs(ref_lse[i]) + 1e-5) << "lse row " << i;
  }
}

TEST(CpuCrossEntropy, BackwardMatchesFiniteDifferencesAndRunsInPlace) {
  CpuKernels k;
  const std::int64_t n = 3, v = 11;
  const float dloss = 0.37f;  // L = dloss * sum(losses)
  const auto logits = random_floats(n * v, 2, -3.0f, 3.0f);
  const std::vector<std::int32_t> targets = {4, 0, 10};
  std::vector<float> losses(n), lse(n), dlogits(n * v, 5.0f);
  k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
  k.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), dloss, n, v);
  const auto fd = finite_difference(
      [&](const std::vector<double>& x) {
        std::vector<double> l, s;
        ce_reference(x, targets, n, v, &l, &s);
        double total = 0.0;
        for (double li : l) total += dloss * li;
        return total;
      },
      to_double(logits));
  expect_close(dlogits, fd, kGradTol, "cross-entropy dlogits");
  auto inplace = logits;
  k.cross_entropy_backward(inplace.data(), inplace.data(), lse.data(), targets.data(), dloss, n, v);
  expect_bit_equal(inplace, dlogits, "cross-entropy backward in place over the logits");
}

TEST(CpuCrossEntropy, TargetsOutsideTheVocabularyAreRefused) {
  CpuKernels k;
  const std::vector<float> logits(2 * 4, 0.0f);
  std::vector<float> losses(2), lse(2), d(8);
  const std::vector<std::int32_t> too_big = {1, 4};
  const std::vector<std::int32_t> negative = {-2, 0};  // -1 is kIgnoredTarget; any other negative is refused
  EXPECT_THROW(k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), too_big.data(), 2, 4),
               std::out_of_range);
  EXPECT_THROW(k.cross_entropy_backward(d.data(), logits.data(), lse.data(), negative.data(), 1.0f, 2, 4),
               std::out_of_range);
}

TEST(CpuCrossEntropy, AnIgnoredTargetsRowAddsNothingAndGetsNoGradient) {
  CpuKernels k;
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 3.0f, -2.0f, 0.0f};
  const std::vector<std::int32_t> targets = {kIgnoredTarget, 2};
  std::vector<float> losses(2, 7.0f), lse(2, 7.0f), d(8, 7.0f);
  k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), 2, 4);
  EXPECT_EQ(losses[0], 0.0f);
  EXPECT_EQ(lse[0], 0.0f);
  EXPECT_GT(losses[1], 0.0f);
  k.cross_entropy_backward(d.data(), logits.data(), lse.data(), targets.data(), 1.0f, 2, 4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(d[j], 0.0f) << "ignored row, column " << j;
  EXPECT_LT(d[6], 0.0f) << "the counted row's target column";
}

TEST(CpuCrossEntropy, LongRowsMatchReferenceWhereverTheMaximumIs) {
  // v spans several online-softmax blocks (2048 logits) and a ragged tail; the row maximum sits in
  // the first block, the last full block, the tail, and (row 3) rises block after block.
  const CpuKernels k;
  const std::int64_t n = 4, v = 3 * 2048 + 37;
  auto logits = random_floats(n * v, 9, -6.0f, 6.0f);
  logits[0 * v + 5] = 30.0f;
  logits[1 * v + 2 * 2048 + 100] = 30.0f;
  logits[2 * v + v - 3] = 30.0f;
  for (std::int64_t j = 0; j < v; ++j) logits[3 * v + j] += 0.01f * static_cast<float>(j);
  const std::vector<std::int32_t> targets = {5, 17, static_cast<std::int32_t>(v - 1), 2048};
  std::vector<float> losses(n), lse(n);
  k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
  std::vector<double> ref_losses, ref_lse;
  ce_reference(to_double(logits), targets, n, v, &ref_losses, &ref_lse);
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(lse[i], ref_lse[i], 2e-6 * std::fabs(ref_lse[i])) << "lse row " << i;
    EXPECT_NEAR(losses[i], ref_losses[i], 2e-6 * std::fabs(ref_lse[i])) << "loss row " << i;
  }
}

TEST(CpuCrossEntropy, LeadingBlocksOfMinusInfinityAddNothing) {
  // A row whose first online-softmax block (2048 logits) is all -inf: the loss is that of the
  // finite rest, not NaN; its softmax gives the -inf logits zero gradient.
  const CpuKernels k;
  const std::int64_t v = 2048 + 300;
  auto logits = random_floats(v, 14, -3.0f, 3.0f);
  for (std::int64_t j = 0; j < 2048; ++j) logits[j] = -std::numeric_limits<float>::infinity();
  const std::vector<std::int32_t> target = {2100};
  float loss = 0.0f, lse = 0.0f;
  k.cross_entropy_forward(&loss, &lse, logits.data(), target.data(), 1, v);
  double sum = 0.0;
  for (std::int64_t j = 2048; j < v; ++j) sum += std::exp(static_cast<double>(logits[j]));
  EXPECT_NEAR(lse, std::log(sum), 2e-6 * std::fabs(std::log(sum))) << "lse of a row led by -inf logits";
  EXPECT_NEAR(loss, std::log(sum) - logits[2100], 2e-6 * std::fabs(std::log(sum))) << "loss";
  std::vector<float> d(v);
  k.cross_entropy_backward(d.data(), logits.data(), &lse, target.data(), 1.0f, 1, v);
  for (std::int64_t j = 0; j < 2048; ++j) ASSERT_LT(d[j], 1e-30f) << "dlogits[" << j << "] of a -inf logit";
}

TEST(CpuCrossEntropy, SameBitsAtAnyRowAddress) {
  // Rows copied to a buffer shifted by 1-3 floats (another alignment) give the same bits.
  const CpuKernels k;
  const std::int64_t n = 3, v = 2048 + 19;
  const auto logits = random_floats(n * v, 10, -8.0f, 8.0f);
  const std::vector<std::int32_t> targets = {0, 1000, 2066};
  auto run = [&](std::int64_t offset) {
    std::vector<float> buffer(n * v + offset), losses(n), lse(n);
    std::copy(logits.begin(), logits.end(), buffer.begin() + offset);
    k.cross_entropy_forward(losses.data(), lse.data(), buffer.data() + offset, targets.data(), n, v);
    k.cross_entropy_backward(buffer.data() + offset, buffer.data() + offset, lse.data(), targets.data(), 0.25f, n, v);
    losses.insert(losses.end(), buffer.begin() + offset, buffer.end());
    return losses;
  };
  const auto aligned = run(0);
  for (std::int64_t offset : {1, 2, 3}) {
    expect_bit_equal(run(offset), aligned, "losses|dlogits with the logits " + std::to_string(offset) + " floats on");
  }
}

TEST(CpuCrossEntropy, BitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t n = 64, v = 2048 + 1000;
  const auto logits = random_floats(n * v, 3, -5.0f, 5.0f);
  std::vector<std::int32_t> targets(n);
  for (std::int64_t i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>((i * 37) % v);
  auto run = [&](int threads) {
    std::vector<float> losses(n), lse(n), d(n * v);
    test::with_threads(threads, [&] {
      k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
      k.cross_entropy_backward(d.data(), logits.data(), lse.data(), targets.data(), 1.0f / n, n, v);
    });
    losses.insert(losses.end(), d.begin(), d.end());
    return losses;
  };
  expect_bit_equal(run(1), run(2), "cross-entropy losses|dlogits, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
