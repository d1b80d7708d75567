// The tokenizer of a run, as its checkpoints (and exports) record it in the RunConfig's `run`
// section: tokenizer (bytes | bpe | gpt2), tokenizer_vocab, tokenizer_dir (absolute; bpe and gpt2
// when known) and tokenizer_hash (hex XXH64 of vocab.json + merges.txt, when known). Recorded,
// never compared on resume: the model's vocab_size is what must match.
#pragma once

#include <optional>

#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

void add_tokenizer(RunConfig& config, const TokenizerSpec& tokenizer);
// nullopt when the run recorded no tokenizer (checkpoints of older builds). Throws
// std::invalid_argument for a field that does not parse.
std::optional<TokenizerSpec> stored_tokenizer(const RunConfig& config);

}  // namespace tessera
