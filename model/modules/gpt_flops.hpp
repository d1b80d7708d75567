// Training FLOPs of a GPT: 6 x (matmul parameters) per token plus attention (PaLM appendix B):
// per token, forward 2 * (L * M + V C) + 4 L T C, with M a block's matmul weights (GPT-2: 4C^2 +
// 2CF, 12C^2 at F = 4C; Llama: C (C + 2 KV hs) + C^2 + 3CF) and 4 L T C for q k^T and P v over the
// full T x T (PaLM's count; the causal kernels compute about half of it); training = 3 x forward.
#pragma once

#include <cstdint>

#include "tessera/model/modules/gpt.hpp"

namespace tessera {

double gpt_training_flops_per_token(const GptConfig& config, std::int64_t seq_len);

}  // namespace tessera
