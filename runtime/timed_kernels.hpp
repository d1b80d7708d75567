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
  kOptimizer,    // gradient norm (sum of squares, non-finite check), scaling, AdamW updates
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

  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
            const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
            std::int64_t ldc) const override;
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t n,
                      std::int64_t c, std::int64_t oc) const override;
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const override;
  void linear_gelu_forward(float* out, float* pre, const float* inp, const float* weight, const float* bias,
                           std::int64_t n, std::int64_t c, std::int64_t oc) const override;
  void linear_gelu_backward(float* dinp, float* dweight, float* dbias, float* dout, const float* pre,
                            const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                            std::int64_t oc) const override;
  void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                         std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const override;
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                          std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, std::int64_t n, std::int64_t c, float eps) const override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, std::int64_t n,
                          std::int64_t c) const override;
  void residual_layernorm_forward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                  const float* b, const float* weight, const float* bias, std::int64_t n,
                                  std::int64_t c, float eps) const override;
  void residual_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                   const float* dresidual, const float* inp, const float* weight,
                                   const float* mean, const float* rstd, std::int64_t n,
                                   std::int64_t c) const override;
  void attention_forward(float* out, float* probs, const float* qkv, std::int64_t b, std::int64_t t,
                         std::int64_t c, std::int64_t nh) const override;
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* probs,
                          std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) const override;
  void gelu_forward(float* out, const float* inp, std::int64_t n) const override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const override;
  void add(float* out, const float* a, const float* b, std::int64_t n) const override;
  void scale(float* x, float s, std::int64_t n) const override;
  void cross_entropy_forward(float* losses, float* lse, const float* logits, const std::int32_t* targets,
                             std::int64_t n, std::int64_t v) const override;
  void cross_entropy_backward(float* dlogits, const float* logits, const float* lse, const std::int32_t* targets,
                              float dloss, std::int64_t n, std::int64_t v) const override;
  void sum(const float* x, std::int64_t n, double* out) const override;
  void sum_squares(const float* x, std::int64_t n, double* out) const override;
  void has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const override;
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                    const AdamWScalars& s) const override;
  void adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                        float* v_absmax, std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                        const AdamWScalars& no_decay, const AdamWScalars& decay) const override;
  void convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const override;

 private:
  // Runs `op` and adds its wall time to `group`.
  template <typename Op>
  void timed(KernelGroup group, Op&& op) const;

  const Kernels& inner_;
  mutable std::array<std::atomic<std::int64_t>, kKernelGroupCount> nanoseconds_{};
  mutable std::array<std::atomic<std::int64_t>, kKernelGroupCount> calls_{};
};

}  // namespace tessera
