// CUDA element conversion between floating dtypes (f32, bf16, f16): one grid-stride loop per pair,
// through the element codecs of precision/float_codec.hpp (round to nearest even, NaN kept NaN), so
// the bits are the CPU's.
#include <stdexcept>
#include <string>

#include "tessera/precision/float_codec.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera::detail {
namespace {

template <typename From, typename To>
__global__ void convert_kernel(const typename From::Storage* in, typename To::Storage* out, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) out[i] = To::store(From::load(in[i]));
}

template <typename From, typename To>
void launch_pair(const void* src, void* dst, std::int64_t n, cudaStream_t stream) {
  convert_kernel<From, To><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const typename From::Storage*>(src),
                                                                 static_cast<typename To::Storage*>(dst), n);
  TESSERA_CUDA_CHECK_LAUNCH("convert_kernel");
}

template <typename From>
void launch_from(const void* src, void* dst, DType to, std::int64_t n, cudaStream_t stream) {
  switch (to) {
    case DType::kF32: launch_pair<From, F32Codec>(src, dst, n, stream); return;
    case DType::kBF16: launch_pair<From, BF16Codec>(src, dst, n, stream); return;
    case DType::kF16: launch_pair<From, F16Codec>(src, dst, n, stream); return;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
}

}  // namespace

void launch_convert(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream) {
  if (!is_floating(from) || !is_floating(to) || from == to) {
    throw std::invalid_argument(std::string("convert: cannot convert ") + dtype_name(from) + " to " + dtype_name(to) +
                                " on the GPU; convert only between different dtypes of f32, bf16 and f16");
  }
  if (n == 0) return;
  switch (from) {
    case DType::kF32: launch_from<F32Codec>(src, dst, to, n, stream); return;
    case DType::kBF16: launch_from<BF16Codec>(src, dst, to, n, stream); return;
    case DType::kF16: launch_from<F16Codec>(src, dst, to, n, stream); return;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: return;
  }
}

}  // namespace tessera::detail
