// Token ids against the model's vocabulary, checked once when the data is opened: a token file made
// with another tokenizer (GPT-2's 50257 ids for a 320-id byte model) would otherwise index past the
// embedding table. The scan is a vectorised maximum over each memory-mapped file (a few ms per
// 100M tokens); only a file whose maximum is too large is walked again to find the first bad id.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tessera/text/data/token_dataset.hpp"

namespace tessera {

struct TokenOutsideVocab {
  std::int64_t position = 0;  // index of the token in its file (0: the first token after the header)
  std::int64_t id = 0;
};

// The first token of `tokens` (uint16) that is >= vocab, or nullopt when every id fits.
std::optional<TokenOutsideVocab> find_token_outside_vocab(std::span<const std::uint16_t> tokens, std::int64_t vocab);
std::optional<TokenOutsideVocab> find_token_outside_vocab(std::span<const std::uint32_t> tokens, std::int64_t vocab);

// Checks every file behind `dataset` (whole files, also for a slice). Throws SettingError
// ("model.vocab_size") naming the file, the first offending id and its position, the vocabulary,
// and what to change (a larger vocabulary, or the tokenizer the model is meant for).
void check_token_ids(const TokenDataset& dataset, std::int64_t vocab);

}  // namespace tessera
