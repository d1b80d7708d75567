// best_call_ms: how the kernel benchmarks time a call, as STREAM reports its best: one warm-up
// call, then calls until at least `min_seconds` have passed and `min_calls` were made; the fastest
// call (the one least disturbed by other processes) in milliseconds.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>

namespace tessera::benchmarks {

inline double best_call_ms(double min_seconds, int min_calls, const std::function<void()>& body) {
  body();
  double best = 1e300, elapsed = 0.0;
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  do {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    elapsed = std::chrono::duration<double>(t1 - start).count();
    ++calls;
  } while (elapsed < min_seconds || calls < min_calls);
  return best * 1e3;
}

}  // namespace tessera::benchmarks
