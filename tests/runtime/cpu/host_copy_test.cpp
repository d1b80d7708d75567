// stream_copy / parallel_stream_copy: exact bytes for odd sizes and every misalignment of source
// and destination (vector body, byte head and tail), bytes around the destination untouched, and
// multi-block copies on 1 and 2 threads; stream_zero / parallel_stream_zero likewise.
#include "tessera/runtime/cpu/host_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

std::vector<unsigned char> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<unsigned char> out(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  return out;
}

// Copies `bytes` from src+src_off into dst+dst_off with `copy`; checks the copy and that the guard
// bytes before and after the destination kept their value. Returns the number of wrong bytes.
template <typename Copy>
std::size_t check_copy(Copy copy, std::size_t bytes, std::size_t src_off, std::size_t dst_off) {
  constexpr std::size_t kGuard = 64;
  const auto src = pattern(bytes + src_off + kGuard, static_cast<std::uint32_t>(bytes + src_off));
  std::vector<unsigned char> dst(bytes + dst_off + 2 * kGuard, 0xA5);
  copy(dst.data() + kGuard + dst_off, src.data() + src_off, bytes);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (dst[kGuard + dst_off + i] != src[src_off + i]) {
      if (wrong == 0) {
        ADD_FAILURE() << "bytes " << bytes << " src+" << src_off << " dst+" << dst_off << ": byte " << i << " expected "
                      << int(src[src_off + i]) << ", got " << int(dst[kGuard + dst_off + i]);
      }
      ++wrong;
    }
  }
  for (std::size_t i = 0; i < kGuard + dst_off; ++i) wrong += dst[i] != 0xA5;
  for (std::size_t i = kGuard + dst_off + bytes; i < dst.size(); ++i) wrong += dst[i] != 0xA5;
  return wrong;
}

TEST(HostCopy, StreamCopyIsExactForOddSizesAndMisalignedPointers) {
  for (std::size_t bytes : {0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 4097, 65537}) {
    for (std::size_t src_off = 0; src_off < 8; src_off += 3) {
      for (std::size_t dst_off = 0; dst_off < 40; dst_off += 5) {
        EXPECT_EQ(check_copy(stream_copy, bytes, src_off, dst_off), 0u)
            << "stream_copy of " << bytes << " bytes, src+" << src_off << " dst+" << dst_off;
      }
    }
  }
}

TEST(HostCopy, ParallelStreamCopySpansBlocksExactly) {
  // 4 MiB blocks: one block, several with a ragged last one, misaligned ends.
  for (std::size_t bytes : {std::size_t{1} << 20, (std::size_t{4} << 20) + 1, (std::size_t{9} << 20) + 12345}) {
    for (int threads : {1, 2}) {
      test::with_threads(threads, [&] {
        EXPECT_EQ(check_copy(parallel_stream_copy, bytes, 3, 7), 0u)
            << "parallel_stream_copy of " << bytes << " bytes on " << threads << " threads";
        EXPECT_EQ(check_copy(parallel_stream_copy, bytes, 0, 0), 0u)
            << "parallel_stream_copy of " << bytes << " bytes (aligned) on " << threads << " threads";
      });
    }
  }
}

// Zeroes `bytes` at dst+dst_off with `zero` over a patterned buffer; returns the number of bytes
// that are wrong (not zero inside, changed outside).
template <typename Zero>
std::size_t check_zero(Zero zero, std::size_t bytes, std::size_t dst_off) {
  constexpr std::size_t kGuard = 64;
  std::vector<unsigned char> dst(bytes + dst_off + 2 * kGuard, 0xA5);
  zero(dst.data() + kGuard + dst_off, bytes);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (dst[kGuard + dst_off + i] != 0 && wrong++ == 0) {
      ADD_FAILURE() << "bytes " << bytes << " dst+" << dst_off << ": byte " << i << " expected 0, got "
                    << int(dst[kGuard + dst_off + i]);
    }
  }
  for (std::size_t i = 0; i < kGuard + dst_off; ++i) wrong += dst[i] != 0xA5;
  for (std::size_t i = kGuard + dst_off + bytes; i < dst.size(); ++i) wrong += dst[i] != 0xA5;
  return wrong;
}

TEST(HostCopy, StreamZeroIsExactForOddSizesAndMisalignedPointers) {
  for (std::size_t bytes : {0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 4097, 65537}) {
    for (std::size_t dst_off = 0; dst_off < 40; dst_off += 5) {
      EXPECT_EQ(check_zero(stream_zero, bytes, dst_off), 0u) << "stream_zero of " << bytes << " bytes, dst+" << dst_off;
    }
  }
}

TEST(HostCopy, ParallelStreamZeroSplitsAcrossThreadsExactly) {
  // Below 2 MiB one part; above, one part per thread with a ragged last one.
  for (std::size_t bytes : {std::size_t{1} << 20, (std::size_t{2} << 20) + 1, (std::size_t{9} << 20) + 12345}) {
    for (int threads : {1, 2, 3}) {
      test::with_threads(threads, [&] {
        EXPECT_EQ(check_zero(parallel_stream_zero, bytes, 7), 0u)
            << "parallel_stream_zero of " << bytes << " bytes on " << threads << " threads";
        EXPECT_EQ(check_zero(parallel_stream_zero, bytes, 0), 0u)
            << "parallel_stream_zero of " << bytes << " bytes (aligned) on " << threads << " threads";
      });
    }
  }
}

}  // namespace
}  // namespace tessera
