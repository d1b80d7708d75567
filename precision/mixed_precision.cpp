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
  if (compute_dtype != DType::kF32 && compute_dtype != DType::kBF16) {
    throw SettingError("precision.compute_dtype", dtype_name(compute_dtype),
                       "must be f32 or bf16 (f16 would need loss scaling of every activation gradient)");
  }
}

std::string MixedPrecision::to_string() const {
  return std::string("param ") + dtype_name(param_dtype) + ", reduce " + dtype_name(reduce_dtype) + ", compute " +
         dtype_name(compute_dtype);
}

}  // namespace tessera
