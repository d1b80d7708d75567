// reduce_segment gives exactly reduce_in_order's bits — its one-pass two-source f32 loops included
// — for every op, in place on either source or not, over full-mantissa values, signed zeros,
// infinities, subnormals and NaNs. One latitude: the sum of two NaNs is a NaN whose payload is
// either one's (the compiler may swap the operands of an addition, in reduce_in_order as well).
#include "tessera/comm/mpi/segment_reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tessera/comm/host_reduce.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Mostly full-mantissa values, with every special value paired against every other one.
std::vector<float> values(int seed, std::size_t count) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            std::numeric_limits<float>::max(),
                            from_bits(0x7fc00001u),  // quiet NaN with a payload
                            from_bits(0xffa00000u),  // negative signalling-pattern NaN
                            1.0f,
                            -1.0f};
  constexpr std::size_t kSpecials = sizeof specials / sizeof specials[0];
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    // Indices below kSpecials^2 pair special (i / k) of one source with special (i % k) of the other.
    const std::size_t pick = seed == 0 ? i / kSpecials : i % kSpecials;
    v[i] = i < kSpecials * kSpecials ? specials[pick] : testing::messy_float(seed, 0, i);
  }
  return v;
}

enum class Target { kSeparate, kFirst, kSecond };

TEST(SegmentReduce, SameBitsAsReduceInOrder) {
  for (const std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{121}, std::size_t{4099}}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      for (const Target target : {Target::kSeparate, Target::kFirst, Target::kSecond}) {
        const std::vector<float> a_in = values(0, count), b_in = values(1, count);
        std::vector<float> a = a_in, b = b_in, expected(count), out(count);
        const void* sources[] = {a.data(), b.data()};
        reduce_in_order(sources, expected.data(), count, DType::kF32, op);
        float* dst = target == Target::kFirst ? a.data() : target == Target::kSecond ? b.data() : out.data();
        detail::reduce_segment(sources, dst, count, DType::kF32, op);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < count; ++i) {
          const bool two_nans = std::isnan(a_in[i]) && std::isnan(b_in[i]);
          if (two_nans && op != ReduceOp::kMax) {
            wrong += !std::isnan(dst[i]);
          } else {
            wrong += bits(dst[i]) != bits(expected[i]);
          }
        }
        EXPECT_EQ(wrong, 0u) << "count " << count << ", " << reduce_op_name(op) << ", target "
                             << static_cast<int>(target);
      }
    }
  }
}

TEST(SegmentReduce, OtherCasesAreReduceInOrder) {
  // Three sources, and bf16: reduce_in_order itself.
  std::vector<float> a = values(0, 300), b = values(1, 300), c = values(2, 300), expected(300), out(300);
  const void* three[] = {a.data(), b.data(), c.data()};
  reduce_in_order(three, expected.data(), 300, DType::kF32, ReduceOp::kSum);
  detail::reduce_segment(three, out.data(), 300, DType::kF32, ReduceOp::kSum);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(bits(out[i]), bits(expected[i])) << "index " << i;
  std::vector<std::uint16_t> x(64, 0x3f80), y(64, 0x4000), z(64), want(64);  // bf16 1 and 2
  const void* pair[] = {x.data(), y.data()};
  reduce_in_order(pair, want.data(), 64, DType::kBF16, ReduceOp::kAvg);
  detail::reduce_segment(pair, z.data(), 64, DType::kBF16, ReduceOp::kAvg);
  EXPECT_EQ(z, want);
}

}  // namespace
}  // namespace tessera
