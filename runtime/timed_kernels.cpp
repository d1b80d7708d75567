// TimedKernels: every op forwarded to the inner table inside a steady-clock measurement, added to its
// group's atomic totals.
#include "tessera/runtime/timed_kernels.hpp"

#include <chrono>

namespace tessera {

const char* kernel_group_name(KernelGroup group) {
  switch (group) {
    case KernelGroup::kGemm: return "gemm";
    case KernelGroup::kAttention: return "attention";
    case KernelGroup::kElementwise: return "elementwise";
    case KernelGroup::kLoss: return "loss";
    case KernelGroup::kOptimizer: return "optimizer";
    case KernelGroup::kConversion: return "conversion";
  }
  return "unknown";
}

double KernelTimes::total_seconds() const {
  double total = 0.0;
  for (double s : seconds) total += s;
  return total;
}

KernelTimes TimedKernels::times() const {
  KernelTimes t;
  for (int g = 0; g < kKernelGroupCount; ++g) {
    t.seconds[g] = static_cast<double>(nanoseconds_[g].load(std::memory_order_relaxed)) * 1e-9;
    t.calls[g] = calls_[g].load(std::memory_order_relaxed);
  }
  return t;
}

void TimedKernels::reset() {
  for (int g = 0; g < kKernelGroupCount; ++g) {
    nanoseconds_[g].store(0, std::memory_order_relaxed);
    calls_[g].store(0, std::memory_order_relaxed);
  }
}

template <typename Op>
void TimedKernels::timed(KernelGroup group, Op&& op) const {
  const auto t0 = std::chrono::steady_clock::now();
  op();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  const auto g = static_cast<std::size_t>(group);
  nanoseconds_[g].fetch_add(ns.count(), std::memory_order_relaxed);
  calls_[g].fetch_add(1, std::memory_order_relaxed);
}

// Every op: the inner table's op, timed under the op's group.
#define TESSERA_KERNEL_OP(name, group, params, args)      \
  void TimedKernels::name params const {                  \
    timed(KernelGroup::group, [&] { inner_.name args; }); \
  }
#include "tessera/runtime/kernel_ops.hpp"

}  // namespace tessera
