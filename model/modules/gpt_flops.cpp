// GPT training FLOPs per token.
#include "tessera/model/modules/gpt_flops.hpp"

namespace tessera {

double gpt_training_flops_per_token(const GptConfig& c, std::int64_t seq_len) {
  const double L = static_cast<double>(c.layers), C = static_cast<double>(c.channels);
  const double V = static_cast<double>(c.vocab_size), T = static_cast<double>(seq_len);
  const double F = static_cast<double>(c.mlp_hidden());
  const double kv_width = static_cast<double>(c.key_value_heads() * c.head_size());
  const double block_matmul = c.is_llama() ? C * (C + 2.0 * kv_width) + C * C + 3.0 * C * F : 4.0 * C * C + 2.0 * C * F;
  const double matmul_params = L * block_matmul + V * C;
  return 6.0 * matmul_params + 12.0 * L * T * C;
}

}  // namespace tessera
