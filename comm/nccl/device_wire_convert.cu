// Element-wise conversion kernels on the communicator's stream, one grid-stride loop per codec.
#include <stdexcept>
#include <string>

#include "tessera/comm/nccl/device_wire_convert.hpp"
#include "tessera/comm/nccl/nccl_check.hpp"
#include "tessera/precision/float_codec.hpp"

namespace tessera::detail {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 65535;

template <class Codec>
__global__ void narrow_kernel(const float* src, typename Codec::Storage* dst, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = Codec::store(src[i]);
  }
}

template <class Codec>
__global__ void widen_kernel(const typename Codec::Storage* src, float* dst, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = Codec::load(src[i]);
  }
}

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class Codec>
void narrow(const float* src, void* dst, std::size_t count, cudaStream_t stream) {
  narrow_kernel<Codec>
      <<<blocks_for(count), kThreads, 0, stream>>>(src, static_cast<typename Codec::Storage*>(dst), count);
  TESSERA_CUDA_CHECK(cudaGetLastError());
}

template <class Codec>
void widen(const void* src, float* dst, std::size_t count, cudaStream_t stream) {
  widen_kernel<Codec>
      <<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const typename Codec::Storage*>(src), dst, count);
  TESSERA_CUDA_CHECK(cudaGetLastError());
}

[[noreturn]] void refuse(const char* what, DType wire) {
  throw std::invalid_argument(std::string(what) + ": the wire dtype must be f32, bf16 or f16, got " + dtype_name(wire));
}

}  // namespace

void narrow_to_wire_on_stream(const float* src, void* dst, std::size_t count, DType wire, cudaStream_t stream) {
  if (count == 0) return;
  switch (wire) {
    case DType::kF32:
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      return;
    case DType::kBF16: return narrow<BF16Codec>(src, dst, count, stream);
    case DType::kF16: return narrow<F16Codec>(src, dst, count, stream);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  refuse("narrow_to_wire_on_stream", wire);
}

void widen_from_wire_on_stream(const void* src, float* dst, std::size_t count, DType wire, cudaStream_t stream) {
  if (count == 0) return;
  switch (wire) {
    case DType::kF32:
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      return;
    case DType::kBF16: return widen<BF16Codec>(src, dst, count, stream);
    case DType::kF16: return widen<F16Codec>(src, dst, count, stream);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  refuse("widen_from_wire_on_stream", wire);
}

}  // namespace tessera::detail
