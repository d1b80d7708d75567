// MetaKernels: the Kernels table of the meta device. Every kernel does nothing (there is no data;
// reductions write nothing), so the real modules and engine run at the cost of their bookkeeping.
// The scratch sizes the modules ask for are those of the device being planned for, when given (a
// CUDA table's attention scratch), else none, as on the CPU.
#pragma once

#include <functional>
#include <utility>

#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace detail {

// Takes any arguments and does nothing with them (the ops' named parameters are used, for -Wextra).
template <typename... Args>
void ignore_kernel_args(const Args&...) {}

}  // namespace detail

// Kernels::attention_scratch_bytes of the device a plan is for.
using AttentionScratchSize =
    std::function<std::size_t(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, DType dtype)>;

class MetaKernels final : public Kernels {
 public:
  explicit MetaKernels(AttentionScratchSize attention_scratch = {})
      : attention_scratch_(std::move(attention_scratch)) {}

#define TESSERA_KERNEL_OP(name, group, params, args) \
  void name params const override { detail::ignore_kernel_args args; }
#include "tessera/runtime/kernel_ops.hpp"

  std::size_t attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      DType dtype) const override {
    return attention_scratch_ ? attention_scratch_(b, t, c, nh, dtype) : 0;
  }

 private:
  AttentionScratchSize attention_scratch_;
};

}  // namespace tessera
