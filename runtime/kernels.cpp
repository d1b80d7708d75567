// Kernels: the table's defaults for the ops that are not in kernel_ops.hpp.
#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::size_t Kernels::attention_scratch_bytes(std::int64_t /*b*/, std::int64_t /*t*/, std::int64_t /*c*/,
                                             std::int64_t /*nh*/, DType /*dtype*/) const {
  return 0;  // the tiled kernels need none
}

std::string Kernels::attention_kernel() const { return "tiled online-softmax kernel (f32 tiles)"; }

}  // namespace tessera
