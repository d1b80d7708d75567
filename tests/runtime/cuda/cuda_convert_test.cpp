// CudaKernels::convert against CpuKernels::convert: every pair of f32, bf16 and f16 gives the CPU's
// bits (precision/float_bits.hpp: round to nearest even, ties, subnormals, overflow to inf, NaN kept
// NaN) on an odd-length array; the same dtype copies; integer dtypes copy to themselves and are
// refused otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;

class CudaConvert : public test::CudaKernelTest {};

// f32 values that exercise rounding: ties in bf16 and f16, subnormals of both, overflow, inf, NaN.
std::vector<float> tricky_values() {
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65520.0f,
                          1e-8f,
                          -3e-6f,
                          6.1e-5f,
                          1e38f,
                          -1e-40f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          f32_from_bits(0x3f808000u),  // bf16 tie, even
                          f32_from_bits(0x3f818000u),  // bf16 tie, odd
                          f32_from_bits(0x3f801000u),
                          f32_from_bits(0x3f803000u)};  // f16 ties
  const auto random = test::random_floats(1001, 7, -300.0f, 300.0f);
  x.insert(x.end(), random.begin(), random.end());
  return x;
}

// Host bytes of `x` in `dtype` (converted on the CPU).
std::vector<unsigned char> host_bytes(const CpuKernels& cpu, const std::vector<float>& x, DType dtype) {
  std::vector<unsigned char> out(x.size() * dtype_size(dtype));
  cpu.convert(x.data(), DType::kF32, out.data(), dtype, static_cast<std::int64_t>(x.size()));
  return out;
}

TEST_F(CudaConvert, EveryFloatingPairGivesTheCpuBits) {
  const auto values = tricky_values();
  const auto n = static_cast<std::int64_t>(values.size());
  for (DType from : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (DType to : {DType::kF32, DType::kBF16, DType::kF16}) {
      const auto src = host_bytes(cpu_, values, from);
      std::vector<unsigned char> expected(values.size() * dtype_size(to));
      cpu_.convert(src.data(), from, expected.data(), to, n);
      DeviceBuffer<unsigned char> g_src(src), g_dst(expected.size());
      gpu_->convert(g_src.get(), from, g_dst.get(), to, n);
      const auto actual = g_dst.download();
      const std::size_t size = dtype_size(to);
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (std::memcmp(&actual[i * size], &expected[i * size], size) != 0) {
          std::uint32_t a = 0, e = 0;
          std::memcpy(&a, &actual[i * size], size);
          std::memcpy(&e, &expected[i * size], size);
          ADD_FAILURE() << "convert " << dtype_name(from) << " -> " << dtype_name(to) << " (n=" << n << "): element ["
                        << i << "] (f32 source " << values[i] << ") expected bits 0x" << std::hex << e << " actual 0x"
                        << a << std::dec;
          break;
        }
      }
    }
  }
}

TEST_F(CudaConvert, IntegersCopyToThemselvesAndAreRefusedOtherwise) {
  const std::vector<std::int32_t> ints = {1, -2, 3, 2147483647};
  DeviceBuffer<std::int32_t> src(ints), dst(ints.size());
  gpu_->convert(src.get(), DType::kI32, dst.get(), DType::kI32, 4);
  EXPECT_EQ(dst.download(), ints) << "convert i32 -> i32 (n=4) copy";
  EXPECT_THROW(gpu_->convert(src.get(), DType::kI32, dst.get(), DType::kF32, 4), std::invalid_argument);
  EXPECT_THROW(gpu_->convert(src.get(), DType::kF32, dst.get(), DType::kI8, 4), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
