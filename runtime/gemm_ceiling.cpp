// GEMM ceiling measurement through the device's gemm kernel (buffers tagged as workspace).
#include "runtime/gemm_ceiling.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/kernels.hpp"
#include "runtime/random.hpp"
#include "runtime/tensor.hpp"

namespace tessera {

GemmCeiling measure_gemm_ceiling(Device& device, std::int64_t m, std::int64_t n, std::int64_t k,
                                 double min_seconds) {
  Rng rng(1234);
  auto random_tensor = [&](std::int64_t rows, std::int64_t cols) {
    std::vector<float> v(static_cast<std::size_t>(rows * cols));
    for (float& x : v) x = rng.uniform() - 0.5f;
    return Tensor::from_host(device, v, {rows, cols}, DType::kF32, MemoryCategory::kWorkspace);
  };
  Tensor a = random_tensor(m, k), b = random_tensor(k, n), c = random_tensor(m, n);
  const Kernels& kernels = device.kernels();
  auto run = [&] {
    kernels.gemm(false, false, m, n, k, 1.0f, a.data_as<float>(), k, b.data_as<float>(), n, 0.0f, c.data_as<float>(),
                 n);
  };
  run();  // warm-up
  device.synchronize();
  double best = 1e30, total = 0.0;
  int reps = 0;
  while (total < min_seconds || reps < 3) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    device.synchronize();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
    total += dt;
    ++reps;
  }
  return {m, n, k, 2.0 * static_cast<double>(m) * n * k / best / 1e9};
}

}  // namespace tessera
