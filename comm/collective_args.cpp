// Argument checks for collectives, with messages that name the communicator and what to change.
#include "tessera/comm/collective_args.hpp"

#include <cstdint>
#include <stdexcept>

namespace tessera::detail {
namespace {

[[noreturn]] void fail(const GroupShape& group, const char* collective, const std::string& what) {
  throw std::invalid_argument(std::string(collective) + " on communicator '" + group.name + "' (rank " +
                              std::to_string(group.rank) + "/" + std::to_string(group.size) + "): " + what);
}

void check_buffer(const GroupShape& group, const char* collective, const char* which, const void* data,
                  std::size_t count) {
  if (count > 0 && data == nullptr && group.space != MemorySpace::kMeta) {
    fail(group, collective,
         std::string(which) + " has " + std::to_string(count) +
             " elements but a null data pointer; pass the buffer's address");
  }
}

void check_reduction(const GroupShape& group, const char* collective, DType dtype, ReduceOp op) {
  if (op == ReduceOp::kAvg && !is_floating(dtype)) {
    fail(
        group, collective,
        std::string("avg needs a floating dtype, got ") + dtype_name(dtype) + "; use sum and divide, or reduce in f32");
  }
}

// The small buffer (count_small elements) may sit inside the big one only at element offset
// `rank * count_small` (the in-place layout); any other overlap is refused. A null pointer (only
// valid on kMeta) stands for no memory and overlaps nothing.
void check_overlap(const GroupShape& group, const char* collective, const void* big, std::size_t big_count,
                   const void* small, std::size_t small_count, DType dtype) {
  if (big_count == 0 || small_count == 0 || big == nullptr || small == nullptr) return;
  const std::size_t element = dtype_size(dtype);
  const auto big_begin = reinterpret_cast<std::uintptr_t>(big);
  const auto big_end = big_begin + big_count * element;
  const auto small_begin = reinterpret_cast<std::uintptr_t>(small);
  const auto small_end = small_begin + small_count * element;
  if (small_end <= big_begin || big_end <= small_begin) return;
  const auto in_place = big_begin + static_cast<std::uintptr_t>(group.rank) * small_count * element;
  if (small_begin != in_place) {
    fail(group, collective,
         "the input and output buffers overlap; use separate buffers, or the "
         "in-place layout (the per-rank buffer at element offset rank * count "
         "of the full one)");
  }
}

void check_reduce_scatter_shape(const GroupShape& group, const char* collective, ConstSpan in, Span out, DType dtype,
                                ReduceOp op) {
  check_buffer(group, collective, "in", in.data, in.count);
  check_buffer(group, collective, "out", out.data, out.count);
  check_reduction(group, collective, dtype, op);
  const std::size_t expected = out.count * static_cast<std::size_t>(group.size);
  if (in.count != expected) {
    fail(group, collective,
         "in has " + std::to_string(in.count) + " elements but out.count * size() = " + std::to_string(out.count) +
             " * " + std::to_string(group.size) + " = " + std::to_string(expected) +
             "; out.count is the per-rank count (NCCL semantics), so "
             "pass an input of out.count * size() elements (pad it if needed)");
  }
  check_overlap(group, collective, in.data, in.count, out.data, out.count, dtype);
}

void check_wire(const GroupShape& group, const char* collective, DType wire) {
  if (is_floating(wire)) return;
  fail(group, collective,
       std::string("the wire dtype must be f32, bf16 or f16, got ") + dtype_name(wire) +
           "; the buffers are f32 and travel as one of those");
}

}  // namespace

void check_all_reduce_f32_args(const GroupShape& group, Span buf, DType wire, ReduceOp op) {
  check_buffer(group, "all_reduce_f32", "buf", buf.data, buf.count);
  check_reduction(group, "all_reduce_f32", DType::kF32, op);
  check_wire(group, "all_reduce_f32", wire);
}

void check_reduce_scatter_f32_args(const GroupShape& group, ConstSpan in, Span out, DType wire, ReduceOp op) {
  check_wire(group, "reduce_scatter_f32", wire);
  check_reduce_scatter_shape(group, "reduce_scatter_f32", in, out, DType::kF32, op);
}

void check_all_reduce_args(const GroupShape& group, Span buf, DType dtype, ReduceOp op) {
  check_buffer(group, "all_reduce", "buf", buf.data, buf.count);
  check_reduction(group, "all_reduce", dtype, op);
}

void check_reduce_scatter_args(const GroupShape& group, ConstSpan in, Span out, DType dtype, ReduceOp op) {
  check_reduce_scatter_shape(group, "reduce_scatter", in, out, dtype, op);
}

void check_all_gather_args(const GroupShape& group, ConstSpan in, Span out, DType dtype) {
  check_buffer(group, "all_gather", "in", in.data, in.count);
  check_buffer(group, "all_gather", "out", out.data, out.count);
  const std::size_t expected = in.count * static_cast<std::size_t>(group.size);
  if (out.count != expected) {
    fail(group, "all_gather",
         "out has " + std::to_string(out.count) + " elements but in.count * size() = " + std::to_string(in.count) +
             " * " + std::to_string(group.size) + " = " + std::to_string(expected) +
             "; in.count is the per-rank count (NCCL semantics), so "
             "pass an output of in.count * size() elements");
  }
  check_overlap(group, "all_gather", out.data, out.count, in.data, in.count, dtype);
}

void check_broadcast_args(const GroupShape& group, Span buf, DType dtype, int root) {
  (void)dtype;
  check_buffer(group, "broadcast", "buf", buf.data, buf.count);
  if (root < 0 || root >= group.size) {
    fail(group, "broadcast",
         "root " + std::to_string(root) +
             " is not a rank of this communicator;"
             " pass a root in [0, " +
             std::to_string(group.size) + ")");
  }
}

}  // namespace tessera::detail
