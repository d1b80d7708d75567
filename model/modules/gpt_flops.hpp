// Training FLOPs of a GPT: 6 x (matmul parameters) per token plus attention (PaLM appendix B):
// per token, forward 2*(12 L C^2 + V C) + 4 L T C (q k^T and P v over the full T x T, PaLM's count;
// the causal kernels compute about half of it);
// training = 3 x forward.
#pragma once

#include <cstdint>

#include "tessera/model/modules/gpt.hpp"

namespace tessera {

double gpt_training_flops_per_token(const GptConfig& config, std::int64_t seq_len);

}  // namespace tessera
