// Autoregressive sampling from a GPT (inference mode: nothing kept for backward).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/context.hpp"
#include "runtime/modules/gpt.hpp"
#include "runtime/random.hpp"

namespace tessera {

struct SamplingOptions {
  std::int64_t new_tokens = 200;
  float temperature = 0.8f;  // <= 0: greedy
  std::int64_t top_k = 0;    // 0: all tokens
  std::int64_t vocab_limit = 0;  // > 0: never sample ids >= this (padding ids of a padded vocab)
};

// Extends `prompt` (non-empty) by options.new_tokens tokens; the context is cropped to the model's
// max_seq_len. Returns only the new tokens.
std::vector<std::int32_t> sample_tokens(Gpt& model, Device& device, std::vector<std::int32_t> prompt,
                                        const SamplingOptions& options, Rng& rng);

}  // namespace tessera
