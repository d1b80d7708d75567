// narrow_to_wire_on_stream / widen_from_wire_on_stream: f32 values into and out of the dtype they
// travel in (bf16, f16; f32 copies), on the GPU, queued on a CUDA stream — what the NCCL
// communicator's _f32 collectives run around NCCL's own bf16/f16 reductions. The same rounding as
// the host (precision/float_codec.hpp: round to nearest even), one thread per element.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "tessera/precision/dtype.hpp"

namespace tessera::detail {

// dst (count) `wire` <- src (count) f32, device pointers. Throws std::invalid_argument for a
// non-floating wire, std::runtime_error when the launch fails.
void narrow_to_wire_on_stream(const float* src, void* dst, std::size_t count, DType wire, cudaStream_t stream);

// dst (count) f32 <- src (count) `wire` (exact), device pointers.
void widen_from_wire_on_stream(const void* src, float* dst, std::size_t count, DType wire, cudaStream_t stream);

}  // namespace tessera::detail
