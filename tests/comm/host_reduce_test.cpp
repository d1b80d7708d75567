// reduce_in_order: rank-ordered f32 accumulation, one rounding for bf16/f16, NaN-propagating max,
// wrapping i32 sums, in-place output, and blocks of uneven length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "comm/host_reduce.hpp"
#include "precision/float_bits.hpp"

namespace tessera {
namespace {

TEST(HostReduce, F32SumIsLeftToRightInSourceOrder) {
  // (1e8 + 1) + (-1e8) = 0 in f32 but 1e8 + (-1e8 + 1) = 1: the order is observable.
  std::vector<float> a{1e8f}, b{1.0f}, c{-1e8f}, out(1);
  const void* abc[] = {a.data(), b.data(), c.data()};
  reduce_in_order(abc, out.data(), 1, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(out[0], (1e8f + 1.0f) + -1e8f);
  const void* acb[] = {a.data(), c.data(), b.data()};
  reduce_in_order(acb, out.data(), 1, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(out[0], 1.0f);
}

TEST(HostReduce, Bf16AccumulatesInF32AndRoundsOnce) {
  const std::size_t count = 5000;  // more than two blocks
  std::vector<std::uint16_t> one(count, f32_to_bf16(1.0f)), small(count, f32_to_bf16(3.0f / 1024.0f)), out(count);
  const void* sources[] = {one.data(), small.data(), small.data()};
  reduce_in_order(sources, out.data(), count, DType::kBF16, ReduceOp::kSum);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(bf16_to_f32(out[i]), 1.0f + 1.0f / 128.0f) << "index " << i;
}

TEST(HostReduce, F16AvgDividesTheF32Sum) {
  std::vector<std::uint16_t> a(3, f32_to_f16(1.0f)), b(3, f32_to_f16(2.0f)), c(3, f32_to_f16(2.0f)), out(3);
  const void* sources[] = {a.data(), b.data(), c.data()};
  reduce_in_order(sources, out.data(), 3, DType::kF16, ReduceOp::kAvg);
  EXPECT_EQ(out[2], f32_to_f16(5.0f / 3.0f));
}

TEST(HostReduce, MaxPropagatesNaNAndKeepsTheEarlierOfEqualValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a{1.0f, nan, -0.0f, 3.0f}, b{nan, 2.0f, 0.0f, -7.0f}, out(4);
  const void* sources[] = {a.data(), b.data()};
  reduce_in_order(sources, out.data(), 4, DType::kF32, ReduceOp::kMax);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_TRUE(std::signbit(out[2])) << "-0 came first and equals +0, so it is kept";
  EXPECT_EQ(out[3], 3.0f);
}

TEST(HostReduce, I32SumWrapsAndMaxWorks) {
  std::vector<std::int32_t> a{std::numeric_limits<std::int32_t>::max(), -5}, b{1, 9}, out(2);
  const void* sources[] = {a.data(), b.data()};
  reduce_in_order(sources, out.data(), 2, DType::kI32, ReduceOp::kSum);
  EXPECT_EQ(out[0], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(out[1], 4);
  reduce_in_order(sources, out.data(), 2, DType::kI32, ReduceOp::kMax);
  EXPECT_EQ(out[1], 9);
  EXPECT_THROW(reduce_in_order(sources, out.data(), 2, DType::kI32, ReduceOp::kAvg), std::invalid_argument);
}

TEST(HostReduce, InPlaceIntoASource) {
  const std::size_t count = 4097;
  std::vector<float> a(count), b(count);
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f;
  }
  const void* sources[] = {a.data(), b.data()};
  reduce_in_order(sources, b.data(), count, DType::kF32, ReduceOp::kSum);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(b[i], static_cast<float>(i) + 0.5f) << "index " << i;
}

}  // namespace
}  // namespace tessera
