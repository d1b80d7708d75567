// Argument checks shared by the communicator backends: counts that do not fit the group size, null
// buffers, overlapping buffers that are not the documented in-place layout, avg on integers.
// Each throws std::invalid_argument with a message that says what to change. A communicator on
// MemorySpace::kMeta (loopback) reads no memory, so there a null pointer with a count is valid.
#pragma once

#include <string>

#include "tessera/comm/reduce_op.hpp"
#include "tessera/comm/span.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_space.hpp"

namespace tessera::detail {

struct GroupShape {
  const std::string& name;  // communicator name, for messages
  int rank;
  int size;
  MemorySpace space;  // the communicator's memory_space()
};

void check_all_reduce_args(const GroupShape& group, Span buf, DType dtype, ReduceOp op);
void check_reduce_scatter_args(const GroupShape& group, ConstSpan in, Span out, DType dtype, ReduceOp op);
void check_all_gather_args(const GroupShape& group, ConstSpan in, Span out, DType dtype);
void check_broadcast_args(const GroupShape& group, Span buf, DType dtype, int root);
// The _f32 collectives: f32 buffers checked as above, and a floating wire dtype.
void check_all_reduce_f32_args(const GroupShape& group, Span buf, DType wire, ReduceOp op);
void check_reduce_scatter_f32_args(const GroupShape& group, ConstSpan in, Span out, DType wire, ReduceOp op);

}  // namespace tessera::detail
