// Token id check: block-wise vectorised maximum, then a walk of the first failing block.
#include "tessera/text/data/token_id_check.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {
constexpr std::size_t kBlock = 1 << 16;  // tokens per maximum (128 KiB): stops early in a bad file
}

namespace {

template <typename T>
std::optional<TokenOutsideVocab> find_outside(std::span<const T> tokens, std::int64_t vocab) {
  if (vocab > static_cast<std::int64_t>(std::numeric_limits<T>::max())) return std::nullopt;  // every id fits
  const T limit = static_cast<T>(std::max<std::int64_t>(vocab, 0));
  for (std::size_t begin = 0; begin < tokens.size(); begin += kBlock) {
    const std::size_t end = std::min(tokens.size(), begin + kBlock);
    T highest = 0;
#pragma omp simd reduction(max : highest)
    for (std::size_t i = begin; i < end; ++i) highest = tokens[i] > highest ? tokens[i] : highest;
    if (highest < limit && vocab > 0) continue;
    for (std::size_t i = begin; i < end; ++i) {
      if (tokens[i] >= limit)
        return TokenOutsideVocab{static_cast<std::int64_t>(i), static_cast<std::int64_t>(tokens[i])};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<TokenOutsideVocab> find_token_outside_vocab(std::span<const std::uint16_t> tokens, std::int64_t vocab) {
  return find_outside(tokens, vocab);
}

std::optional<TokenOutsideVocab> find_token_outside_vocab(std::span<const std::uint32_t> tokens, std::int64_t vocab) {
  return find_outside(tokens, vocab);
}

void check_token_ids(const TokenDataset& dataset, std::int64_t vocab) {
  for (const TokenFile& file : dataset.files()) {
    const std::optional<TokenOutsideVocab> bad = file.token_bytes() == 2
                                                     ? find_token_outside_vocab(file.tokens(), vocab)
                                                     : find_token_outside_vocab(file.tokens32(), vocab);
    if (!bad) continue;
    throw SettingError(
        "model.vocab_size", std::to_string(vocab),
        file.path() + " holds token id " + std::to_string(bad->id) + " at position " + std::to_string(bad->position) +
            " (of " + std::to_string(file.num_tokens()) + " tokens), outside the model's vocabulary of " +
            std::to_string(vocab) + " ids (0.." + std::to_string(vocab - 1) + "); use a vocabulary of at least " +
            std::to_string(bad->id + 1) + ", or re-create the file with the tokenizer the model is meant for");
  }
}

}  // namespace tessera
