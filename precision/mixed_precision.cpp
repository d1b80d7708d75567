// MixedPrecision validation and description.
#include "precision/mixed_precision.hpp"

#include <stdexcept>

namespace tessera {

void MixedPrecision::validate() const {
  auto check = [](DType d, const char* option) {
    if (!is_floating(d)) {
      throw std::invalid_argument(std::string(option) + " must be f32, bf16 or f16, got " + dtype_name(d));
    }
  };
  check(param_dtype, "--param-dtype");
  check(reduce_dtype, "--reduce-dtype");
  check(buffer_dtype, "--buffer-dtype");
}

std::string MixedPrecision::to_string() const {
  return std::string("param ") + dtype_name(param_dtype) + ", reduce " + dtype_name(reduce_dtype) + ", buffer " +
         dtype_name(buffer_dtype);
}

}  // namespace tessera
