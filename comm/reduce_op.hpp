// ReduceOp: how a reducing collective combines the ranks' values element by element.
#pragma once

#include <cstdint>

namespace tessera {

enum class ReduceOp : std::uint8_t {
  kSum,  // x_0 + x_1 + ... + x_{N-1}
  kAvg,  // the sum divided by N (floating dtypes only)
  kMax,  // the largest value; NaN wins over any number
};

const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max"

}  // namespace tessera
