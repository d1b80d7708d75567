// A small byte-level BPE vocabulary for the tokenizer file fuzzers: all 256 byte tokens, a few merges
// that "hello world" uses, and <|endoftext|>.
#pragma once

#include <string>
#include <utility>

#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/byte_unicode.hpp"

namespace tessera::testing::fuzz {

inline BpeVocabulary small_bpe_vocabulary() {
  BpeVocabulary v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bytes_to_token_text(std::string(1, static_cast<char>(b))));
  const std::pair<std::string, std::string> merges[] = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"},
                                                        {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}};
  for (const auto& [l, r] : merges) {
    v.merges.emplace_back(l, r);
    v.tokens.push_back(l + r);
  }
  v.tokens.push_back(kEndOfTextToken);
  return v;
}

}  // namespace tessera::testing::fuzz
