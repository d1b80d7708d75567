// CPU vocabulary-sharded embedding (tensor parallelism): a rank's table holds the vocabulary rows
// [first, first + rows). The kernels of embedding_rows.hpp over that range: a token outside it
// contributes a zero row forward (the output is then the position row exactly) and nothing
// backward, so the shards' outputs summed over the group are embedding_forward's and their dwte
// concatenated embedding_backward's. Tokens are checked against the whole vocabulary.
#include "tessera/runtime/cpu/embedding_rows.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

#define TESSERA_CPU_EMBEDDING_SHARD_OPS(T)                                                                        \
  void LevelKernels::embedding_shard_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,      \
                                             std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first,  \
                                             std::int64_t rows, std::int64_t vocab) const {                       \
    detail::check_vocab_range(detail::VocabRange{first, rows}, vocab, "CpuKernels::embedding_shard_forward");     \
    detail::check_embedding_tokens(tokens, b* t, vocab, "CpuKernels::embedding_shard_forward");                   \
    detail::embedding_range_forward(out, tokens, wte, wpe, b, t, c, detail::VocabRange{first, rows});             \
  }                                                                                                               \
  void LevelKernels::embedding_shard_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens,        \
                                              std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first, \
                                              std::int64_t rows, std::int64_t vocab) const {                      \
    detail::check_vocab_range(detail::VocabRange{first, rows}, vocab, "CpuKernels::embedding_shard_backward");    \
    detail::check_embedding_tokens(tokens, b* t, vocab, "CpuKernels::embedding_shard_backward");                  \
    detail::embedding_range_backward(dwte, dwpe, dout, tokens, b, t, c, detail::VocabRange{first, rows});         \
  }
TESSERA_CPU_EMBEDDING_SHARD_OPS(float)
TESSERA_CPU_EMBEDDING_SHARD_OPS(Bf16)
#undef TESSERA_CPU_EMBEDDING_SHARD_OPS

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
