// A GPT's shape as the model fields of a RunConfig (what checkpoints and exports record, and what
// a resume must match): vocab_size, max_seq_len, layers, heads, channels — written and read back.
#pragma once

#include <string>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/model/modules/gpt.hpp"

namespace tessera {

// Sets the five model fields of `gpt` in `config`.
void add_gpt_config(RunConfig& config, const GptConfig& gpt);

// The GPT the model fields describe. Throws CheckpointError (kConfigMismatch) naming `where` and the
// missing field when one is absent.
GptConfig gpt_config_of(const RunConfig& config, const std::string& where);

}  // namespace tessera
