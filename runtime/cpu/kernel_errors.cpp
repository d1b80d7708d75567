// The CPU kernels' error messages (compiled once, outside the per-level code).
#include "tessera/runtime/cpu/kernel_errors.hpp"

#include <stdexcept>
#include <string>

#include "tessera/runtime/kernels.hpp"

namespace tessera {

void throw_blas_int(const char* what, std::int64_t value) {
  throw std::invalid_argument(std::string("CpuKernels::gemm: ") + what + " = " + std::to_string(value) +
                              " does not fit a 32-bit BLAS int; split the product into smaller GEMMs");
}

void throw_quant_blocks(std::int64_t n, std::int64_t block) {
  throw std::invalid_argument("adamw8bit_update: " + std::to_string(n) + " elements do not split into blocks of " +
                              std::to_string(block) + " (1 to " + std::to_string(kMaxQuantBlock) + ")");
}

void throw_id_outside(const char* where, const char* what, std::int64_t i, std::int32_t id, std::int64_t v,
                      const char* table) {
  std::string message(where);
  message.append(": ").append(what).append("[").append(std::to_string(i)).append("] = ");
  message.append(std::to_string(id)).append(" is outside the ").append(table).append(" [0, ");
  message.append(std::to_string(v)).append("); check the data's token ids against the model's vocab size");
  throw std::out_of_range(message);
}

void throw_convert(DType from, DType to) {
  throw std::invalid_argument(std::string("CpuKernels::convert: cannot convert ") + dtype_name(from) + " to " +
                              dtype_name(to) + "; convert only between f32, bf16 and f16");
}

}  // namespace tessera
