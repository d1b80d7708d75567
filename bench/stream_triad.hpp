// A STREAM-like triad, a[i] = b[i] + s * c[i] over f32 arrays, as the memory-bandwidth reference of
// the benchmarks: OpenMP-parallel over the current thread count like the kernels, the arrays
// first touched by the threads that use them. Bytes are counted the way STREAM counts them: every
// array read or written once (12 bytes per element; the cache-line reads a store causes are not
// counted, for the triad as for the kernels).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>

namespace tessera::benchmarks {

// The last-level cache in bytes: the highest-level cache sysfs lists for cpu0 (the C library's
// figure is a fallback: in virtual machines it can report the host's total), 0 when unknown.
inline std::int64_t last_level_cache_bytes() {
  int best_level = 0;
  std::int64_t best_bytes = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    std::int64_t bytes = std::atoll(size.c_str());
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    if (level > best_level) best_level = level, best_bytes = bytes;
  }
  if (best_bytes > 0) return best_bytes;
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
  return 0;
}

class StreamTriad {
 public:
  // Three arrays of n floats each (n >= 1).
  explicit StreamTriad(std::int64_t n) : n_(n < 1 ? 1 : n) {
    const std::size_t bytes = (static_cast<std::size_t>(n_) * sizeof(float) + 63) / 64 * 64;
    a_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    b_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    c_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (a_ == nullptr || b_ == nullptr || c_ == nullptr) {
      release();
      throw std::bad_alloc();
    }
    float* a = a_;
    float* b = b_;
    float* c = c_;
    const std::int64_t n_all = n_;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n_all; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  }
  ~StreamTriad() { release(); }
  StreamTriad(const StreamTriad&) = delete;
  StreamTriad& operator=(const StreamTriad&) = delete;

  // One pass: a = b + s * c.
  void run(float s = 3.0f) {
    float* a = a_;
    const float* b = b_;
    const float* c = c_;
    const std::int64_t n = n_;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  }

  double bytes() const { return 3.0 * static_cast<double>(n_) * sizeof(float); }

 private:
  void release() {
    std::free(a_);
    std::free(b_);
    std::free(c_);
    a_ = b_ = c_ = nullptr;
  }

  std::int64_t n_;
  float* a_ = nullptr;
  float* b_ = nullptr;
  float* c_ = nullptr;
};

}  // namespace tessera::benchmarks
