// GEMM ceiling measurement through the device's gemm kernel (buffers tagged as workspace).
#include "tessera/runtime/gemm_ceiling.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

Tensor random_tensor(Device& device, Rng& rng, std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (float& x : v) x = rng.uniform() - 0.5f;
  return Tensor::from_host(device, v, {rows, cols}, DType::kF32, MemoryCategory::kWorkspace);
}

}  // namespace

GemmCeilingProbe::GemmCeilingProbe(Device& device, std::int64_t m, std::int64_t n, std::int64_t k)
    : device_(device), m_(m), n_(n), k_(k) {
  Rng rng(1234);
  a_ = random_tensor(device, rng, m, k);
  b_ = random_tensor(device, rng, k, n);
  c_ = random_tensor(device, rng, m, n);
}

GemmCeiling GemmCeilingProbe::measure(double min_seconds) {
  const Kernels& kernels = device_.kernels();
  auto run = [&] {
    kernels.gemm(false, false, m_, n_, k_, 1.0f, a_.data_as<float>(), k_, b_.data_as<float>(), n_, 0.0f,
                 c_.data_as<float>(), n_);
  };
  run();  // warm-up
  device_.synchronize();
  double best = 1e30, total = 0.0;
  int reps = 0;
  while (total < min_seconds || reps < 3) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    device_.synchronize();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
    total += dt;
    ++reps;
  }
  return {m_, n_, k_, 2.0 * static_cast<double>(m_) * n_ * k_ / best / 1e9};
}

GemmCeiling measure_gemm_ceiling(Device& device, std::int64_t m, std::int64_t n, std::int64_t k, double min_seconds) {
  return GemmCeilingProbe(device, m, n, k).measure(min_seconds);
}

}  // namespace tessera
