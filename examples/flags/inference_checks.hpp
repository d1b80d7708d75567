// What the programs that only run a model (tessera_eval, tessera_generate) check before they use
// it, so a wrong flag ends in a message naming it and what to change, never in a kernel's shape
// error or std::bad_alloc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

// Refuses `tokens` positions in one sequence beyond the model's context (max_seq_len), naming `flag`.
void check_within_context(std::int64_t tokens, const GptConfig& model, const std::string& flag);

// Bytes a forward of (micro, seq_len) tokens holds at most: the logits (micro, seq_len, vocab) f32
// and every layer's activations as training keeps them (about 18 x channels f32 per token and layer).
std::int64_t forward_bytes_bound(const GptConfig& model, std::int64_t micro, std::int64_t seq_len);

// Refuses a micro-batch whose forward_bytes_bound exceeds this process's share of the device's
// memory (`sharers` processes on the node), naming `micro_flag` and the largest micro-batch that
// fits. Passes when the budget is unknown.
void check_forward_fits(const GptConfig& model, std::int64_t micro, std::int64_t seq_len, const Device& device,
                        int sharers, const std::string& micro_flag);

// Refuses data whose recorded tokenizer is not the model's (when both are recorded), naming the
// data file, both tokenizers and what to change.
void check_data_tokenizer(const std::optional<TokenizerSpec>& model, const std::optional<TokenizerSpec>& data,
                          const std::string& data_path);

}  // namespace tessera
