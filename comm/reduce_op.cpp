// Names of the reduce operations, for messages and tables.
#include "tessera/comm/reduce_op.hpp"

namespace tessera {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMax: return "max";
  }
  return "unknown-op";
}

}  // namespace tessera
