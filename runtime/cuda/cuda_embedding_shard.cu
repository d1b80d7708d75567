// CUDA vocabulary-sharded embedding (tensor parallelism): a rank's table holds the vocabulary rows
// [first, first + rows). embedding_rows.cuh's kernels over that range: a token outside it
// contributes a zero row forward (the output is then the position row exactly) and nothing
// backward, so the shards' outputs summed over the group are the whole-table forward's and their
// dwte concatenated the whole-table backward's (the same bits for f32, rows of a token added in
// (b,t) order). The tokens are checked against the whole vocabulary before (TokenRangeCheck).
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/cuda/embedding_rows.cuh"

namespace tessera::detail {

template <typename T>
void launch_embedding_shard_forward(T* out,                      // (b,t,c)
                                    const std::int32_t* tokens,  // (b,t) in [0, vocab)
                                    const T* wte,                // (rows,c): vocabulary rows [first, first + rows)
                                    const T* wpe,                // (maxT,c), maxT >= t; or null
                                    std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first,
                                    std::int64_t rows, cudaStream_t stream) {
  queue_embedding_forward(out, tokens, wte, wpe, b, t, c, first, rows, stream);
}

template <typename T>
void launch_embedding_shard_backward(T* dwte,                     // (rows,c) accumulated
                                     T* dwpe,                     // (maxT,c) accumulated; or null
                                     const T* dout,               // (b,t,c)
                                     const std::int32_t* tokens,  // (b,t) in [0, vocab)
                                     std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first,
                                     std::int64_t rows, cudaStream_t stream, const unsigned long long* refuse_if_bad) {
  queue_embedding_backward(dwte, dwpe, dout, tokens, b, t, c, first, rows, stream, refuse_if_bad);
}

#define TESSERA_INSTANTIATE_EMBEDDING_SHARD(T)                                                                        \
  template void launch_embedding_shard_forward<T>(T*, const std::int32_t*, const T*, const T*, std::int64_t,          \
                                                  std::int64_t, std::int64_t, std::int64_t, std::int64_t,             \
                                                  cudaStream_t);                                                      \
  template void launch_embedding_shard_backward<T>(T*, T*, const T*, const std::int32_t*, std::int64_t, std::int64_t, \
                                                   std::int64_t, std::int64_t, std::int64_t, cudaStream_t,            \
                                                   const unsigned long long*);
TESSERA_INSTANTIATE_EMBEDDING_SHARD(float)
TESSERA_INSTANTIATE_EMBEDDING_SHARD(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_EMBEDDING_SHARD

}  // namespace tessera::detail
