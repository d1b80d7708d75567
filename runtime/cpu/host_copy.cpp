// stream_copy: unaligned loads, aligned non-temporal stores, byte copies for the unaligned head and
// the tail, one store fence at the end; stream_zero likewise with zero vectors. The vectors are
// those of the CPU kernel level this copy of the file is compiled for (AVX at avx2 and avx512,
// SSE2 at portable), chosen at file level.
#include "tessera/runtime/cpu/host_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::size_t kBlock = std::size_t{4} << 20;        // bytes per OpenMP task (copies)
constexpr std::size_t kMinZeroPart = std::size_t{1} << 20;  // bytes per thread at the least (zero-fill)

#if defined(__AVX__)
constexpr std::size_t kVector = 32;
void stream_vectors(char* dst, const char* src, std::size_t vectors) {
  for (std::size_t i = 0; i < vectors; ++i) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i * kVector),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * kVector)));
  }
  _mm_sfence();
}
void stream_zero_vectors(char* dst, std::size_t vectors) {
  const __m256i zero = _mm256_setzero_si256();
  for (std::size_t i = 0; i < vectors; ++i) _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i * kVector), zero);
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
void stream_zero_vectors(char* dst, std::size_t vectors) {
  const __m128i zero = _mm_setzero_si128();
  for (std::size_t i = 0; i < vectors; ++i) _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i * kVector), zero);
  _mm_sfence();
}
#else
constexpr std::size_t kVector = 16;
void stream_vectors(char* dst, const char* src, std::size_t vectors) { std::memcpy(dst, src, vectors * kVector); }
void stream_zero_vectors(char* dst, std::size_t vectors) { std::memset(dst, 0, vectors * kVector); }
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

void stream_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  auto* d = static_cast<char*>(dst);
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(d) % kVector;
  const std::size_t head = std::min(bytes, misalignment == 0 ? 0 : kVector - misalignment);
  std::memset(d, 0, head);
  const std::size_t vectors = (bytes - head) / kVector;
  stream_zero_vectors(d + head, vectors);
  const std::size_t done = head + vectors * kVector;
  std::memset(d + done, 0, bytes - done);
}

void parallel_stream_zero(void* dst, std::size_t bytes) {
  // One equal part per thread (parts of at least 1 MiB), so a few MiB keep every thread busy.
  auto* d = static_cast<char*>(dst);
  const auto threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  const std::size_t parts = std::max<std::size_t>(1, std::min(threads, bytes / kMinZeroPart));
  const std::size_t part = ((bytes + parts - 1) / parts + kVector - 1) / kVector * kVector;
#pragma omp parallel for schedule(static) if (parts > 1)
  for (std::int64_t p = 0; p < static_cast<std::int64_t>(parts); ++p) {
    const std::size_t lo = static_cast<std::size_t>(p) * part;
    if (lo < bytes) stream_zero(d + lo, std::min(bytes, lo + part) - lo);
  }
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

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
