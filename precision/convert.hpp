// Host-side array conversion between floating dtypes (f32, bf16, f16), round to nearest even.
#pragma once

#include <cstddef>

#include "tessera/precision/dtype.hpp"

namespace tessera {

// Converts n elements from `src` (dtype `from`) to `dst` (dtype `to`). Both are host pointers.
// Same dtype copies. Throws std::invalid_argument for i32 on either side.
void convert_host(const void* src, DType from, void* dst, DType to, std::size_t n);

}  // namespace tessera
