// stream_copy: unaligned loads, aligned non-temporal stores, byte copies for the unaligned head and
// the tail, one store fence at the end. The instruction set is chosen at compile time, at file level.
#include "runtime/cpu/host_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera {
namespace {

constexpr std::size_t kBlock = std::size_t{4} << 20;  // bytes per OpenMP task

#if defined(__AVX__)
constexpr std::size_t kVector = 32;
void stream_vectors(char* dst, const char* src, std::size_t vectors) {
  for (std::size_t i = 0; i < vectors; ++i) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i * kVector),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * kVector)));
  }
  _mm_sfence();
}
#elif defined(__x86_64__)
constexpr std::size_t kVector = 16;
void stream_vectors(char* dst, const char* src, std::size_t vectors) {
  for (std::size_t i = 0; i < vectors; ++i) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i * kVector),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * kVector)));
  }
  _mm_sfence();
}
#else
constexpr std::size_t kVector = 16;
void stream_vectors(char* dst, const char* src, std::size_t vectors) { std::memcpy(dst, src, vectors * kVector); }
#endif

}  // namespace

void stream_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(d) % kVector;
  const std::size_t head = std::min(bytes, misalignment == 0 ? 0 : kVector - misalignment);
  std::memcpy(d, s, head);
  const std::size_t vectors = (bytes - head) / kVector;
  stream_vectors(d + head, s + head, vectors);
  const std::size_t done = head + vectors * kVector;
  std::memcpy(d + done, s + done, bytes - done);
}

void parallel_stream_copy(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const auto blocks = static_cast<std::int64_t>((bytes + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t lo = static_cast<std::size_t>(b) * kBlock;
    stream_copy(d + lo, s + lo, std::min(bytes, lo + kBlock) - lo);
  }
}

}  // namespace tessera
