// A GPT's shape as the model fields of a RunConfig (what checkpoints and exports record, and what
// a resume must match): vocab_size, max_seq_len, layers, heads, channels, and where they differ from
// GPT-2's defaults architecture, kv_heads, ffn_dim, rope_theta, norm_eps, tied_head — written and
// read back (a field absent is GPT-2's default, so older checkpoints read as they were written).
#pragma once

#include <cstdint>
#include <string>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/model/modules/gpt.hpp"

namespace tessera {

// Sets the model fields of `gpt` in `config`.
void add_gpt_config(RunConfig& config, const GptConfig& gpt);

// The GPT the model fields describe. Throws CheckpointError naming `where` and the field when one is
// absent (kConfigMismatch), not a positive integer, or the sizes make no GPT (kCorruptData:
// GptConfig::validate).
GptConfig gpt_config_of(const RunConfig& config, const std::string& where);

// The architecture the model fields record (GPT-2 when they record none). CheckpointError
// (kCorruptData) naming `where` for an unknown one.
GptArchitecture gpt_architecture_of(const RunConfig& config, const std::string& where);

// Parameters of `gpt` (validated; GptConfig::parameter_count), the tensors an export holds.
std::int64_t gpt_parameter_count(const GptConfig& gpt);

}  // namespace tessera
