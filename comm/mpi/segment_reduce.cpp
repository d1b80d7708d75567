// reduce_segment: one-pass loops for two f32 sources (the compiler vectorises them; dst equal to a
// source is an element-wise dependence it allows), reduce_in_order for everything else.
#include "tessera/comm/mpi/segment_reduce.hpp"

#include "tessera/comm/host_reduce.hpp"

namespace tessera::detail {
namespace {

// reduce_in_order's f32 arithmetic for sources (a, b): acc = a; acc += b (sum), then acc /= 2
// (avg); max keeps the earlier value unless the later one is larger or NaN.
void sum_two(const float* a, const float* b, float* dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = a[i] + b[i];
}

void avg_two(const float* a, const float* b, float* dst, std::size_t count) {
  const float divisor = 2.0f;
  for (std::size_t i = 0; i < count; ++i) dst[i] = (a[i] + b[i]) / divisor;
}

void max_two(const float* a, const float* b, float* dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = (b[i] > a[i] || b[i] != b[i]) ? b[i] : a[i];
}

}  // namespace

void reduce_segment(std::span<const void* const> sources, void* dst, std::size_t count, DType dtype, ReduceOp op) {
  if (dtype != DType::kF32 || sources.size() != 2) return reduce_in_order(sources, dst, count, dtype, op);
  const auto* a = static_cast<const float*>(sources[0]);
  const auto* b = static_cast<const float*>(sources[1]);
  auto* out = static_cast<float*>(dst);
  switch (op) {
    case ReduceOp::kSum: return sum_two(a, b, out, count);
    case ReduceOp::kAvg: return avg_two(a, b, out, count);
    case ReduceOp::kMax: return max_two(a, b, out, count);
  }
  reduce_in_order(sources, dst, count, dtype, op);
}

}  // namespace tessera::detail
