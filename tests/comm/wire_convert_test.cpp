// narrow_to_wire / widen_from_wire: bit for bit the element codecs (round to nearest even, NaN kept
// NaN, overflow to inf, subnormals kept) on every dtype, and refusal of non-floating wires.
#include "tessera/comm/wire_convert.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tessera/precision/float_bits.hpp"

namespace tessera {
namespace {

std::vector<float> values() {
  std::vector<float> v{0.0f,
                       -0.0f,
                       1.0f,
                       -1.0f,
                       1.0f + 1.0f / 256.0f,
                       1.0f + 3.0f / 256.0f,
                       65504.0f,
                       65520.0f,
                       1.0e-7f,
                       -3.0e-8f,
                       1.0e-40f,
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::max(),
                       std::numeric_limits<float>::denorm_min()};
  for (std::uint32_t i = 0; i < 3000; ++i) v.push_back(f32_from_bits(i * 1431655761u));
  return v;
}

TEST(WireConvert, NarrowAndWidenMatchTheCodecs) {
  const std::vector<float> in = values();
  const std::size_t n = in.size();
  std::vector<std::uint16_t> bf16(n), f16(n);
  narrow_to_wire(in.data(), bf16.data(), n, DType::kBF16);
  narrow_to_wire(in.data(), f16.data(), n, DType::kF16);
  std::vector<float> from_bf16(n), from_f16(n), copied(n);
  widen_from_wire(bf16.data(), from_bf16.data(), n, DType::kBF16);
  widen_from_wire(f16.data(), from_f16.data(), n, DType::kF16);
  narrow_to_wire(in.data(), copied.data(), n, DType::kF32);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf16[i], f32_to_bf16(in[i])) << "bf16 of " << in[i] << " (index " << i << ")";
    ASSERT_EQ(f16[i], f32_to_f16(in[i])) << "f16 of " << in[i] << " (index " << i << ")";
    ASSERT_EQ(f32_bits(from_bf16[i]), f32_bits(bf16_to_f32(bf16[i]))) << "widened bf16, index " << i;
    ASSERT_EQ(f32_bits(from_f16[i]), f32_bits(f16_to_f32(f16[i]))) << "widened f16, index " << i;
    ASSERT_EQ(f32_bits(copied[i]), f32_bits(in[i])) << "f32 wire copies, index " << i;
  }
}

TEST(WireConvert, RefusesNonFloatingWires) {
  std::vector<float> f(4);
  std::vector<std::int32_t> i(4);
  EXPECT_THROW(narrow_to_wire(f.data(), i.data(), 4, DType::kI32), std::invalid_argument);
  EXPECT_THROW(widen_from_wire(i.data(), f.data(), 4, DType::kI8), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
