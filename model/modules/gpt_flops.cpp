// GPT training FLOPs per token.
#include "tessera/model/modules/gpt_flops.hpp"

namespace tessera {

double gpt_training_flops_per_token(const GptConfig& c, std::int64_t seq_len) {
  const double L = static_cast<double>(c.layers), C = static_cast<double>(c.channels);
  const double V = static_cast<double>(c.vocab_size), T = static_cast<double>(seq_len);
  const double matmul_params = 12.0 * L * C * C + V * C;
  return 6.0 * matmul_params + 12.0 * L * T * C;
}

}  // namespace tessera
