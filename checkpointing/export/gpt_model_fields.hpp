// A GPT's shape as the model fields of a RunConfig (what checkpoints and exports record, and what
// a resume must match): vocab_size, max_seq_len, layers, heads, channels — written and read back.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/model/modules/gpt.hpp"

namespace tessera {

// Sets the five model fields of `gpt` in `config`.
void add_gpt_config(RunConfig& config, const GptConfig& gpt);

// The GPT the model fields describe. Throws CheckpointError naming `where` and the field when one is
// absent (kConfigMismatch), not a positive integer, or the sizes make no GPT (kCorruptData:
// GptConfig::validate).
GptConfig gpt_config_of(const RunConfig& config, const std::string& where);

// Parameters of `gpt` (validated): V*C + T*C + L*(12*C*C + 13*C) + 2*C, the tensors an export holds.
std::int64_t gpt_parameter_count(const GptConfig& gpt);

}  // namespace tessera
