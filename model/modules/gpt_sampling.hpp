// Autoregressive sampling from a GPT (inference mode: nothing kept for backward).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/context.hpp"
#include "tessera/model/modules/gpt.hpp"

namespace tessera {

struct SamplingOptions {
  std::int64_t new_tokens = 200;
  float temperature = 0.8f;      // <= 0: greedy
  std::int64_t top_k = 0;        // 0: all tokens
  std::int64_t vocab_limit = 0;  // > 0: never sample ids >= this (padding ids of a padded vocab)
};

// tokens (1,T) i32 -> logits (1,T,V) f32, run in inference mode (ctx.training == false).
using LogitsFunction = std::function<Tensor(Context& ctx, const Tensor& tokens)>;

// tokens (1,T) i32 -> the last position's logits (V) on the host, run in inference mode: for a model
// whose logits are not whole rows on one rank (vocabulary-parallel: TensorParallel::whole_vocabulary_row).
using LastLogitsFunction = std::function<std::vector<float>(Context& ctx, const Tensor& tokens)>;

// Extends `prompt` (non-empty) by options.new_tokens tokens; the context is cropped to
// config.max_seq_len. Returns only the new tokens. Deterministic for a given rng state, so ranks
// that must all run the forward (sharded parameters) draw the same tokens in lockstep.
std::vector<std::int32_t> sample_tokens(const LogitsFunction& logits_of, const GptConfig& config, Device& device,
                                        std::vector<std::int32_t> prompt, const SamplingOptions& options, Rng& rng);
std::vector<std::int32_t> sample_tokens(const LastLogitsFunction& last_logits_of, const GptConfig& config,
                                        Device& device, std::vector<std::int32_t> prompt,
                                        const SamplingOptions& options, Rng& rng);

}  // namespace tessera
