// TimedKernels: a Kernels table that forwards every op to another table and adds up the wall time
// spent in it per KernelGroup (GEMMs, attention, element-wise, loss, optimizer, conversion), so a
// benchmark can split the real training step into its kernels and what lies around them.
//
// The time of a call is measured on the calling host thread around the forwarded call: exact on a
// device whose kernels run synchronously (the CPU device); on a device that queues kernels
// asynchronously it would be the cost of queueing. Thread-safe: calls from several threads add
// into the same atomic totals. TimedDevice (runtime/timed_device.hpp) puts one in front of a device.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "tessera/runtime/kernels.hpp"

namespace tessera {

enum class KernelGroup {
  kGemm,         // gemm, linear layers (with their bias; linear + GELU with its GELU)
  kAttention,    // attention forward and backward
  kElementwise,  // embedding, layernorm (plain and with the residual add), GELU, residual adds
  kLoss,         // cross-entropy forward and backward, the loss sum
  kOptimizer,    // gradient norm (sum of squares, accumulate + norm, non-finite check), scaling, AdamW
  kConversion,   // dtype conversion (mixed precision)
};

inline constexpr int kKernelGroupCount = 6;
inline constexpr std::array<KernelGroup, kKernelGroupCount> kAllKernelGroups = {
    KernelGroup::kGemm, KernelGroup::kAttention, KernelGroup::kElementwise,
    KernelGroup::kLoss, KernelGroup::kOptimizer, KernelGroup::kConversion};

// "gemm", "attention", "elementwise", "loss", "optimizer", "conversion".
const char* kernel_group_name(KernelGroup group);

// Seconds and calls per group since the last reset.
struct KernelTimes {
  std::array<double, kKernelGroupCount> seconds{};
  std::array<std::int64_t, kKernelGroupCount> calls{};

  double seconds_of(KernelGroup g) const { return seconds[static_cast<int>(g)]; }
  std::int64_t calls_of(KernelGroup g) const { return calls[static_cast<int>(g)]; }
  double total_seconds() const;
};

class TimedKernels final : public Kernels {
 public:
  // `inner` must outlive this table.
  explicit TimedKernels(const Kernels& inner) : inner_(inner) {}

  KernelTimes times() const;
  void reset();

#define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
#include "tessera/runtime/kernel_ops.hpp"
  std::size_t attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      DType dtype) const override {
    return inner_.attention_scratch_bytes(b, t, c, nh, dtype);
  }
  std::string attention_kernel() const override { return inner_.attention_kernel(); }

 private:
  // Runs `op` and adds its wall time to `group`.
  template <typename Op>
  void timed(KernelGroup group, Op&& op) const;

  const Kernels& inner_;
  mutable std::array<std::atomic<std::int64_t>, kKernelGroupCount> nanoseconds_{};
  mutable std::array<std::atomic<std::int64_t>, kKernelGroupCount> calls_{};
};

}  // namespace tessera
