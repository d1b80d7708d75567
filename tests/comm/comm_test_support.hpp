// Helpers for collective tests in the nccl-tests style: inputs built from (seed, rank, index),
// expected outputs worked out from those formulas, and a comparison that counts wrong elements and
// reports the first ones with expected vs actual, rank, dtype and index.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/comm/collective_call.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/precision/float_bits.hpp"

namespace tessera::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// A small integer in [-8, 7] from (seed, rank, index): sums over a few ranks are exact in every dtype.
inline int small_int(int seed, int rank, std::size_t i) {
  const std::uint64_t h =
      static_cast<std::uint64_t>(seed) * 31u + static_cast<std::uint64_t>(rank) * 17u + i * 7u + (i >> 4) * 3u;
  return static_cast<int>(h % 16u) - 8;
}

// The sum over n ranks of small_int(seed, r, i): exact in f32.
inline float small_int_sum(int seed, int n, std::size_t i) {
  int sum = 0;
  for (int r = 0; r < n; ++r) sum += small_int(seed, r, i);
  return static_cast<float>(sum);
}

// Runs the collective `issue` returns, expects CollectiveMismatchError, and returns its message
// ("no error raised" or "wrong exception type: ..." otherwise).
template <class F>
std::string mismatch_message(F&& issue) {
  try {
    issue().wait();
  } catch (const CollectiveMismatchError& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("wrong exception type: ") + error.what();
  }
  return "no error raised";
}

// A value with a full f32 mantissa in about [-4, 4) from (seed, rank, index): sums are inexact.
inline float messy_float(int seed, int rank, std::size_t i) {
  std::uint64_t x = static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ull ^
                    (static_cast<std::uint64_t>(rank) + 1) * 0xBF58476D1CE4E5B9ull ^
                    (static_cast<std::uint64_t>(i) + 1) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  x *= 0xD6E8FEB86633C9F5ull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 8.0 - 4.0);
}

// Host array of one dtype, stored as bytes.
class DTypeBuffer {
 public:
  DTypeBuffer(DType dtype, std::size_t count) : dtype_(dtype), count_(count), bytes_(count * dtype_size(dtype)) {}

  DType dtype() const { return dtype_; }
  std::size_t count() const { return count_; }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::byte* at(std::size_t i) { return bytes_.data() + i * dtype_size(dtype_); }

  // Stores v rounded to the dtype (i32: v must be an integer).
  void set(std::size_t i, float v) {
    std::byte* p = at(i);
    switch (dtype_) {
      case DType::kF32: std::memcpy(p, &v, 4); break;
      case DType::kBF16: {
        const std::uint16_t h = f32_to_bf16(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kF16: {
        const std::uint16_t h = f32_to_f16(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kI32: {
        const auto n = static_cast<std::int32_t>(v);
        std::memcpy(p, &n, 4);
        break;
      }
      case DType::kI8: {
        const auto n = static_cast<std::int8_t>(v);
        std::memcpy(p, &n, 1);
        break;
      }
      case DType::kU8: {
        const auto n = static_cast<std::uint8_t>(v);
        std::memcpy(p, &n, 1);
        break;
      }
    }
  }

  float get(std::size_t i) const {
    const std::byte* p = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::kF32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DType::kBF16: {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return bf16_to_f32(h);
      }
      case DType::kF16: {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return f16_to_f32(h);
      }
      case DType::kI32: {
        std::int32_t n;
        std::memcpy(&n, p, 4);
        return static_cast<float>(n);
      }
      case DType::kI8: {
        std::int8_t n;
        std::memcpy(&n, p, 1);
        return static_cast<float>(n);
      }
      case DType::kU8: {
        std::uint8_t n;
        std::memcpy(&n, p, 1);
        return static_cast<float>(n);
      }
    }
    return 0.0f;
  }

  std::uint32_t bits(std::size_t i) const {
    std::uint32_t u = 0;
    std::memcpy(&u, bytes_.data() + i * dtype_size(dtype_), dtype_size(dtype_));
    return u;
  }

  bool same_bits(std::size_t i, const DTypeBuffer& other, std::size_t j) const {
    const std::size_t e = dtype_size(dtype_);
    return std::memcmp(bytes_.data() + i * e, other.bytes_.data() + j * e, e) == 0;
  }

  void fill_pattern(std::byte value) { std::memset(bytes_.data(), static_cast<int>(value), bytes_.size()); }

 private:
  DType dtype_;
  std::size_t count_;
  std::vector<std::byte> bytes_;
};

// Compares actual against expected element by element, bit for bit after rounding expected to the
// dtype. Returns "" when all match, else "<label>: W of N elements wrong (rank R, dtype D); index i:
// expected E actual A; ...".
inline std::string compare_exact(const DTypeBuffer& actual, const DTypeBuffer& expected, const std::string& label) {
  std::size_t wrong = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < actual.count(); ++i) {
    if (actual.same_bits(i, expected, i)) continue;
    if (wrong < 4) {
      first << "; index " << i << ": expected " << std::setprecision(9) << expected.get(i) << " (bits 0x" << std::hex
            << expected.bits(i) << ") actual " << actual.get(i) << " (bits 0x" << actual.bits(i) << ")" << std::dec;
    }
    ++wrong;
  }
  if (wrong == 0) return {};
  std::ostringstream out;
  out << label << ": " << wrong << " of " << actual.count() << " elements wrong (rank " << world_rank() << ", dtype "
      << dtype_name(actual.dtype()) << ")" << first.str();
  return out.str();
}

// Spacing of representable values of `dtype` at |x| (one unit in the last place).
inline double ulp_at(double x, DType dtype) {
  const int mantissa_bits = dtype == DType::kBF16 ? 7 : dtype == DType::kF16 ? 10 : 23;
  const int min_exponent = dtype == DType::kF16 ? -14 : -126;
  int exponent = 0;
  std::frexp(x == 0.0 ? 1e-30 : x, &exponent);
  return std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
}

}  // namespace tessera::testing
