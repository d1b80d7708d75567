// MixedPrecision validation and description.
#include "tessera/precision/mixed_precision.hpp"

#include "tessera/core/setting_error.hpp"

namespace tessera {

void MixedPrecision::validate() const {
  auto check = [](DType d, const char* setting) {
    if (!is_floating(d)) throw SettingError(setting, dtype_name(d), "must be f32, bf16 or f16");
  };
  check(param_dtype, "precision.param_dtype");
  check(reduce_dtype, "precision.reduce_dtype");
}

std::string MixedPrecision::to_string() const {
  return std::string("param ") + dtype_name(param_dtype) + ", reduce " + dtype_name(reduce_dtype);
}

}  // namespace tessera
