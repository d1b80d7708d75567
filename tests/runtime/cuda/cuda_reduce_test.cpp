// CudaKernels reductions against CpuKernels: sum and sum_squares in double for n of 0 (writes 0),
// 1, around the chunk size and large; the same bits on every run and wherever x starts (a shard at
// an odd offset); bf16 input through the typed launchers; has_non_finite finds inf, -inf and NaN at
// the ends and in the middle and reports 0 for finite data and n == 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::random_floats;

class CudaReduce : public test::CudaKernelTest {};

double gpu_result(const CudaKernels& gpu, bool squares, const float* x, std::int64_t n) {
  DeviceBuffer<double> out(std::vector<double>{5.0});  // overwritten, also for n == 0
  if (squares)
    gpu.sum_squares(x, n, out.get());
  else
    gpu.sum(x, n, out.get());
  return out.download()[0];
}

TEST_F(CudaReduce, SumAndSumSquaresMatchCpuInDouble) {
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, detail::kReduceChunk,
                         detail::kReduceChunk + 1, (std::int64_t{1} << 22) + 7}) {
    const auto x = random_floats(n, 1, -2.0f, 2.0f);
    double abs_sum = 0.0, sq_sum = 0.0;
    for (float v : x) {
      abs_sum += std::fabs(v);
      sq_sum += static_cast<double>(v) * v;
    }
    DeviceBuffer<float> g_x(x);
    for (bool squares : {false, true}) {
      double expected = 0.0;
      if (squares)
        cpu_.sum_squares(x.data(), n, &expected);
      else
        cpu_.sum(x.data(), n, &expected);
      const double actual = gpu_result(*gpu_, squares, g_x.get(), n);
      const double scale = squares ? sq_sum : abs_sum;  // what rounding errors are relative to
      EXPECT_LE(std::fabs(actual - expected), kF64SumTolerance * scale)
          << (squares ? "sum_squares" : "sum") << " f32 (n=" << n << ") expected " << expected << " actual " << actual;
    }
  }
}

TEST_F(CudaReduce, SameBitsEveryRunAndAtEveryOffset) {
  const std::int64_t n = 3 * detail::kReduceChunk + 77;
  const auto x = random_floats(n, 11);
  std::vector<float> shifted(n + 1, 0.0f);
  std::copy(x.begin(), x.end(), shifted.begin() + 1);
  DeviceBuffer<float> g_x(x), g_shifted(shifted);
  for (bool squares : {false, true}) {
    const std::string what = std::string(squares ? "sum_squares" : "sum") + " f32 (n=" + std::to_string(n) + ")";
    const double first = gpu_result(*gpu_, squares, g_x.get(), n);
    test::expect_same_bits(std::vector<double>{gpu_result(*gpu_, squares, g_x.get(), n)}, std::vector<double>{first},
                           what + " second run vs first");
    test::expect_same_bits(std::vector<double>{gpu_result(*gpu_, squares, g_shifted.get() + 1, n)},
                           std::vector<double>{first}, what + " at offset 1 vs offset 0");
  }
}

TEST_F(CudaReduce, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 50001;
  const auto x = test::round_to_bf16(random_floats(n, 21, 0.0f, 3.0f));
  double expected_sum = 0.0, expected_squares = 0.0;
  cpu_.sum(x.data(), n, &expected_sum);
  cpu_.sum_squares(x.data(), n, &expected_squares);
  DeviceBuffer<__nv_bfloat16> g_x(test::to_bf16(x));
  DeviceBuffer<double> out(2), scratch(detail::reduce_scratch_doubles(n));
  detail::launch_sum(g_x.get(), n, out.get(), scratch.get(), stream_);
  detail::launch_sum_squares(g_x.get(), n, out.get() + 1, scratch.get(), stream_);
  const auto actual = out.download();
  EXPECT_NEAR(actual[0], expected_sum, kF64SumTolerance * expected_sum) << "sum bf16 (n=50001)";
  EXPECT_NEAR(actual[1], expected_squares, kF64SumTolerance * expected_squares) << "sum_squares bf16 (n=50001)";
}

TEST_F(CudaReduce, HasNonFiniteFindsInfAndNanAnywhere) {
  const std::int64_t n = 100003;
  auto x = random_floats(n, 31, -1e30f, 1e30f);
  const auto flag = [&](const std::vector<float>& data, std::int64_t count) {
    DeviceBuffer<float> g_x(data);
    DeviceBuffer<std::int32_t> out(std::vector<std::int32_t>{7});
    gpu_->has_non_finite(g_x.get(), count, out.get());
    return out.download()[0];
  };
  EXPECT_EQ(flag(x, n), 0) << "has_non_finite f32 (n=100003) on finite data";
  EXPECT_EQ(flag(x, 0), 0) << "has_non_finite f32 (n=0)";
  for (std::int64_t at : {std::int64_t{0}, n / 2, n - 1}) {
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
      auto y = x;
      y[at] = bad;
      EXPECT_EQ(flag(y, n), 1) << "has_non_finite f32 (n=100003) with " << bad << " at [" << at << "]";
    }
  }
}

}  // namespace
}  // namespace tessera
