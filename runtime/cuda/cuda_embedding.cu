// CUDA token + position embedding over the whole table: embedding_rows.cuh's kernels with every
// token in the range (the tokens were checked in [0, v) before). The position table may be absent
// (wpe and dwpe null): the forward then copies the token's row and the backward has no positions to
// sum. Also the token check's kernel (find the first token outside [0, v)).
#include <limits>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/cuda/embedding_rows.cuh"

namespace tessera::detail {
namespace {

// The range of a whole table: every checked token lies in it.
constexpr std::int64_t kAllRows = std::numeric_limits<std::int64_t>::max();

__global__ void find_bad_token_kernel(const std::int32_t* tokens, std::int64_t n, std::int64_t v,
                                      unsigned long long* first_bad) {
  for (std::int64_t idx = grid_start(); idx < n; idx += grid_stride()) {
    const std::int32_t tok = tokens[idx];
    if (tok < 0 || tok >= v) {
      atomicMin(first_bad, (static_cast<unsigned long long>(idx) << 32) | static_cast<std::uint32_t>(tok));
    }
  }
}

}  // namespace

template <typename T>
void launch_embedding_forward(T* out,                      // (b,t,c)
                              const std::int32_t* tokens,  // (b,t) in [0, v)
                              const T* wte,                // (v,c)
                              const T* wpe,                // (maxT,c), maxT >= t; or null
                              std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream) {
  queue_embedding_forward(out, tokens, wte, wpe, b, t, c, 0, kAllRows, stream);
}

template <typename T>
void launch_embedding_backward(T* dwte,                     // (v,c) accumulated
                               T* dwpe,                     // (maxT,c) accumulated; or null
                               const T* dout,               // (b,t,c)
                               const std::int32_t* tokens,  // (b,t) in [0, v)
                               std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream,
                               const unsigned long long* refuse_if_bad) {
  queue_embedding_backward(dwte, dwpe, dout, tokens, b, t, c, 0, kAllRows, stream, refuse_if_bad);
}

void launch_find_bad_token(const std::int32_t* tokens, std::int64_t n, std::int64_t v, unsigned long long* first_bad,
                           cudaStream_t stream) {
  if (n == 0) return;
  find_bad_token_kernel<<<grid_for(n), kThreads, 0, stream>>>(tokens, n, v, first_bad);
  TESSERA_CUDA_CHECK_LAUNCH("find_bad_token_kernel");
}

template void launch_embedding_forward<float>(float*, const std::int32_t*, const float*, const float*, std::int64_t,
                                              std::int64_t, std::int64_t, cudaStream_t);
template void launch_embedding_forward<__nv_bfloat16>(__nv_bfloat16*, const std::int32_t*, const __nv_bfloat16*,
                                                      const __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
                                                      cudaStream_t);
template void launch_embedding_backward<float>(float*, float*, const float*, const std::int32_t*, std::int64_t,
                                               std::int64_t, std::int64_t, cudaStream_t, const unsigned long long*);
template void launch_embedding_backward<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*,
                                                       const std::int32_t*, std::int64_t, std::int64_t, std::int64_t,
                                                       cudaStream_t, const unsigned long long*);

}  // namespace tessera::detail
