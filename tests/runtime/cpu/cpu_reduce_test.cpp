// CpuKernels reductions: sum_squares against a double sum (and the same bits on 1 and 2 threads for a
// size split into many chunks), add_sum_squares giving the bits of add then sum_squares (any length,
// offset, thread count, in place), has_non_finite for inf, -inf and NaN at the start, middle and
// end. They write their result to memory the caller passes (a double, an i32 flag).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::random_floats;

double sum_squares(const Kernels& k, const float* x, std::int64_t n) {
  double out = -1.0;
  k.sum_squares(x, n, &out);
  return out;
}

bool has_non_finite(const Kernels& k, const float* x, std::int64_t n) {
  std::int32_t out = -1;
  k.has_non_finite(x, n, &out);
  EXPECT_TRUE(out == 0 || out == 1) << "has_non_finite wrote " << out << ", expected 0 or 1 (n = " << n << ")";
  return out == 1;
}

TEST(CpuReduce, SumSquaresMatchesDoubleSum) {
  CpuKernels k;
  EXPECT_EQ(sum_squares(k, nullptr, 0), 0.0);
  const std::vector<float> small = {3.0f, -4.0f, 0.5f};
  EXPECT_EQ(sum_squares(k, small.data(), 3), 25.25);  // exact
  for (std::int64_t n : {std::int64_t{1000}, std::int64_t{1} << 20, std::int64_t{3000001}}) {
    const auto x = random_floats(n, 5);
    double ref = 0.0;
    for (float v : x) ref += static_cast<double>(v) * v;
    EXPECT_NEAR(sum_squares(k, x.data(), n), ref, 1e-12 * ref) << "n = " << n;
  }
}

TEST(CpuReduce, SumSquaresIsBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t n = 5'000'003;
  const auto x = random_floats(n, 6, -3.0f, 3.0f);
  double one = 0.0, two = 0.0;
  test::with_threads(1, [&] { one = sum_squares(k, x.data(), n); });
  test::with_threads(2, [&] { two = sum_squares(k, x.data(), n); });
  EXPECT_EQ(std::memcmp(&one, &two, sizeof one), 0) << "1 thread " << one << " vs 2 threads " << two;
}

TEST(CpuReduce, AddSumSquaresGivesTheBitsOfAddThenSumSquares) {
  const CpuKernels k;
  const std::int64_t total = 3'000'017;  // several chunks and a ragged tail
  const auto a = random_floats(total, 11, -2.0f, 2.0f);
  const auto b = random_floats(total, 12, -2.0f, 2.0f);
  for (int threads : {1, 2}) {
    for (std::int64_t offset : {0, 1, 3}) {
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{31}, std::int64_t{33},
                             std::int64_t{16384 + 5}, total - offset}) {
        const std::string where = "n " + std::to_string(n) + ", offset " + std::to_string(offset) + ", " +
                                  std::to_string(threads) + " threads";
        std::vector<float> out(static_cast<std::size_t>(n)), in_place(a.begin() + offset, a.begin() + offset + n),
            want(static_cast<std::size_t>(n));
        double fused = -1.0, fused_in_place = -1.0, separate = -2.0;
        test::with_threads(threads, [&] {
          k.add_sum_squares(out.data(), a.data() + offset, b.data() + offset, n, &fused);
          k.add_sum_squares(in_place.data(), in_place.data(), b.data() + offset, n, &fused_in_place);
          k.add(want.data(), a.data() + offset, b.data() + offset, n);
          k.sum_squares(want.data(), n, &separate);
        });
        test::expect_bit_equal(out, want, "add_sum_squares sum, " + where);
        test::expect_bit_equal(in_place, want, "add_sum_squares in place, " + where);
        EXPECT_EQ(std::memcmp(&fused, &separate, sizeof fused), 0)
            << "sum of squares " << fused << ", add then sum_squares " << separate << ", " << where;
        EXPECT_EQ(std::memcmp(&fused_in_place, &separate, sizeof fused), 0) << "in place, " << where;
      }
    }
  }
}

TEST(CpuReduce, HasNonFiniteFindsInfAndNanAnywhere) {
  CpuKernels k;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t n : {std::int64_t{7}, std::int64_t{1} << 18}) {
    auto x = random_floats(n, 7, -1e30f, 1e30f);
    x[n / 3] = std::numeric_limits<float>::max();
    x[n / 2] = std::numeric_limits<float>::denorm_min();
    EXPECT_FALSE(has_non_finite(k, x.data(), n)) << "finite data, n = " << n;
    for (std::int64_t at : {std::int64_t{0}, n / 2, n - 1}) {
      for (float bad : {inf, -inf, nan, -nan}) {
        auto y = x;
        y[at] = bad;
        EXPECT_TRUE(has_non_finite(k, y.data(), n)) << bad << " at [" << at << "] of n = " << n;
      }
    }
  }
}

// The same values at a different address (a shard view) give the same sum of squares, bit for bit.
TEST(CpuReduce, SumSquaresDoesNotDependOnAlignment) {
  const CpuKernels k;
  const std::int64_t n = 100003;
  std::vector<float> buffer(n + 16);
  for (int offset = 0; offset < 8; ++offset) {
    for (std::int64_t i = 0; i < n; ++i) buffer[offset + i] = std::sin(0.001f * i) * (1.0f + 1e-3f * (i % 7));
    const double at = sum_squares(k, buffer.data() + offset, n);
    if (offset == 0) continue;
    for (std::int64_t i = 0; i < n; ++i) buffer[i] = std::sin(0.001f * i) * (1.0f + 1e-3f * (i % 7));
    EXPECT_EQ(at, sum_squares(k, buffer.data(), n)) << "offset " << offset;
  }
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(CpuReduce, SumAddsInIndexOrderInDouble) {
  CpuKernels k;
  // 1e8 + 1 + ... in f32 would lose the ones; in double, in order, they count.
  std::vector<float> x(1001, 1.0f);
  x[0] = 1e8f;
  double out = -1.0;
  k.sum(x.data(), static_cast<std::int64_t>(x.size()), &out);
  EXPECT_EQ(out, 1e8 + 1000.0);
  double expected = 0.0;
  const std::vector<float> r = {0.1f, -3.5f, 7.25f, 1e-7f};
  for (float v : r) expected += v;
  k.sum(r.data(), 4, &out);
  EXPECT_EQ(out, expected) << "the same additions in the same order";
  k.sum(r.data(), 0, &out);
  EXPECT_EQ(out, 0.0);
}

}  // namespace
}  // namespace tessera
