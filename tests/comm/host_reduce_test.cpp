// reduce_in_order: rank-ordered f32 accumulation, one rounding for bf16/f16, NaN-propagating max,
// wrapping i32 sums, in-place output, and blocks of uneven length. reduce_wire_in_order: bit for bit
// narrowing its f32 sources, reduce_in_order in the wire dtype and widening, in place too.
#include "tessera/comm/host_reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tessera/comm/wire_convert.hpp"
#include "tessera/precision/float_bits.hpp"

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

// Full-mantissa values with specials mixed in: NaN, infinities, zeros of both signs, f16 subnormals
// and overflow, bf16 ties.
std::vector<float> wire_test_values(std::size_t count, int source) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t h = static_cast<std::uint32_t>(i * 2654435761u + static_cast<std::size_t>(source) * 40503u);
    switch ((i + static_cast<std::size_t>(source)) % 37) {
      case 1: v[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 5: v[i] = -std::numeric_limits<float>::infinity(); break;
      case 9: v[i] = -0.0f; break;
      case 13: v[i] = 65520.0f; break;                                  // rounds to inf in f16
      case 17: v[i] = 1.0e-7f * static_cast<float>(source + 1); break;  // f16 subnormal
      case 21: v[i] = 1.0f + 1.0f / 256.0f; break;                      // bf16 tie
      default: v[i] = static_cast<float>(static_cast<double>(h) / 4294967296.0 * 6.0 - 3.0); break;
    }
  }
  return v;
}

TEST(HostReduce, WireReductionEqualsNarrowReduceWiden) {
  const std::size_t count = 4999;  // more than two blocks, uneven
  for (DType wire : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      for (std::size_t own = 0; own < 3; ++own) {
        // Three sources; `own` is given as f32, the others as wire values.
        std::vector<std::vector<float>> f32(3);
        std::vector<std::vector<std::byte>> narrow(3, std::vector<std::byte>(count * dtype_size(wire)));
        for (int q = 0; q < 3; ++q) {
          f32[q] = wire_test_values(count, q);
          narrow_to_wire(f32[q].data(), narrow[q].data(), count, wire);
        }
        const void* wire_sources[] = {narrow[0].data(), narrow[1].data(), narrow[2].data()};
        std::vector<std::byte> reduced(count * dtype_size(wire));
        reduce_in_order(wire_sources, reduced.data(), count, wire, op);
        std::vector<float> expected(count), actual(count);
        widen_from_wire(reduced.data(), expected.data(), count, wire);
        std::vector<WireSource> sources;
        for (std::size_t q = 0; q < 3; ++q)
          sources.push_back(q == own ? WireSource{f32[q].data(), true} : WireSource{narrow[q].data(), false});
        reduce_wire_in_order(sources, actual.data(), count, wire, op);
        // In place into the f32 source gives the same.
        reduce_wire_in_order(sources, f32[own].data(), count, wire, op);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(f32_bits(actual[i]), f32_bits(expected[i]))
              << "wire " << dtype_name(wire) << ", " << reduce_op_name(op) << ", f32 source " << own << ", index " << i
              << ": expected " << expected[i] << " actual " << actual[i];
          ASSERT_EQ(f32_bits(f32[own][i]), f32_bits(expected[i])) << "in place, index " << i;
        }
      }
    }
  }
}

TEST(HostReduce, WireReductionRefusesANonFloatingWire) {
  std::vector<float> a(4), out(4);
  const WireSource sources[] = {{a.data(), true}};
  EXPECT_THROW(reduce_wire_in_order(sources, out.data(), 4, DType::kI32, ReduceOp::kSum), std::invalid_argument);
  EXPECT_THROW(reduce_wire_in_order({}, out.data(), 4, DType::kBF16, ReduceOp::kSum), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
