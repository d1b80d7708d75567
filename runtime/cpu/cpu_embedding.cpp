// CPU token + position embedding over the whole table: the kernels of embedding_rows.hpp with the
// range [0, v). Forward copies rows in parallel over positions. Backward is a scatter-add
// parallelised over column blocks (never over tokens), rows added in (b,t) order within a block,
// so repeated tokens accumulate in the same order for every thread count. In bf16 the rows of a
// token are summed in f32 first and added to its gradient row once.
#include "tessera/runtime/cpu/embedding_rows.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

#define TESSERA_CPU_EMBEDDING_OPS(T)                                                                                   \
  void LevelKernels::embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, std::int64_t b, \
                                       std::int64_t t, std::int64_t c, std::int64_t v) const {                         \
    detail::check_embedding_tokens(tokens, b* t, v, "CpuKernels::embedding_forward");                                  \
    detail::embedding_range_forward(out, tokens, wte, wpe, b, t, c, detail::VocabRange{0, v});                         \
  }                                                                                                                    \
  void LevelKernels::embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, std::int64_t b,   \
                                        std::int64_t t, std::int64_t c, std::int64_t v) const {                        \
    detail::check_embedding_tokens(tokens, b* t, v, "CpuKernels::embedding_backward");                                 \
    detail::embedding_range_backward(dwte, dwpe, dout, tokens, b, t, c, detail::VocabRange{0, v});                     \
  }
TESSERA_CPU_EMBEDDING_OPS(float)
TESSERA_CPU_EMBEDDING_OPS(Bf16)
#undef TESSERA_CPU_EMBEDDING_OPS

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
