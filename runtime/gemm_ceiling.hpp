// Measures the device's f32 GEMM throughput: the ceiling that training FLOP/s (MFU) is a ratio to.
#pragma once

#include <cstdint>

#include "tessera/runtime/tensor.hpp"

namespace tessera {

class Device;

struct GemmCeiling {
  std::int64_t m = 0, n = 0, k = 0;
  double gflops = 0.0;  // best of the timed repetitions
};

// The buffers of one GEMM shape, made once, timed as often as asked: for sampling the ceiling
// again and again beside other work without allocating (or faulting in pages) each time.
class GemmCeilingProbe {
 public:
  // a (m,k), b (k,n), c (m,n), f32, random, as workspace on `device` (which must outlive this).
  GemmCeilingProbe(Device& device, std::int64_t m, std::int64_t n, std::int64_t k);

  // Times c = a @ b after one warm-up call, at least 3 times and for at least `min_seconds`;
  // returns the best repetition's GFLOP/s.
  GemmCeiling measure(double min_seconds);

 private:
  Device& device_;
  std::int64_t m_, n_, k_;
  Tensor a_, b_, c_;
};

// Times c (m,n) = a (m,k) @ b (k,n) repeatedly for at least `min_seconds`, returns the best GFLOP/s.
GemmCeiling measure_gemm_ceiling(Device& device, std::int64_t m, std::int64_t n, std::int64_t k,
                                 double min_seconds = 0.3);

}  // namespace tessera
