// MetaKernels: the Kernels table of the meta device. Every kernel does nothing (there is no data;
// reductions write nothing), so the real modules and engine run at the cost of their bookkeeping.
#pragma once

#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace detail {

// Takes any arguments and does nothing with them (the ops' named parameters are used, for -Wextra).
template <typename... Args>
void ignore_kernel_args(const Args&...) {}

}  // namespace detail

class MetaKernels final : public Kernels {
 public:
#define TESSERA_KERNEL_OP(name, group, params, args) \
  void name params const override { detail::ignore_kernel_args args; }
#include "tessera/runtime/kernel_ops.hpp"
};

}  // namespace tessera
