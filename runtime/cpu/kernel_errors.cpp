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

void throw_bad_shard(const char* where, std::int64_t first, std::int64_t rows, std::int64_t vocab) {
  throw std::invalid_argument(std::string(where) + ": the shard [" + std::to_string(first) + ", " +
                              std::to_string(first + rows) + ") (first " + std::to_string(first) + ", size " +
                              std::to_string(rows) + ") is not inside the vocabulary [0, " + std::to_string(vocab) +
                              "); pass first >= 0, a size >= 0 and first + size <= vocab");
}

void throw_no_lse_parts(const char* where, std::int64_t parts) {
  throw std::invalid_argument(std::string(where) + ": parts = " + std::to_string(parts) +
                              "; pass the lse of every shard of the vocabulary (at least one part)");
}

void throw_convert(DType from, DType to) {
  throw std::invalid_argument(std::string("CpuKernels::convert: cannot convert ") + dtype_name(from) + " to " +
                              dtype_name(to) + "; convert only between f32, bf16 and f16");
}

}  // namespace tessera
