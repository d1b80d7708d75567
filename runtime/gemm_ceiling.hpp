// Measures the device's f32 GEMM throughput: the ceiling that training FLOP/s (MFU) is a ratio to.
#pragma once

#include <cstdint>

namespace tessera {

class Device;

struct GemmCeiling {
  std::int64_t m = 0, n = 0, k = 0;
  double gflops = 0.0;  // best of the timed repetitions
};

// Times c (m,n) = a (m,k) @ b (k,n) repeatedly for at least `min_seconds`, returns the best GFLOP/s.
GemmCeiling measure_gemm_ceiling(Device& device, std::int64_t m, std::int64_t n, std::int64_t k,
                                 double min_seconds = 0.3);

}  // namespace tessera
