// Whether tokens made by one tokenizer mean the same to a model trained on another's: the same kind,
// the same number of tokens and, where both recorded it, the same vocabulary files (their hash).
// Where the files live does not matter. A model fed another tokenizer's ids trains or evaluates
// on garbage without any error — a padded vocabulary makes the ids fit — so readers of data for
// a model compare the two records first.
#pragma once

#include <optional>
#include <string>

#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace tessera {

// nullopt when `data`'s ids mean the same as `model`'s; otherwise what differs ("bpe with 512
// tokens vs bytes with 257 tokens", "the vocabulary files differ (hash 1f.. vs 3c..)").
std::optional<std::string> tokenizer_difference(const TokenizerSpec& model, const TokenizerSpec& data);

}  // namespace tessera
