// ByteTokenizer: byte-level tokenizer, so any text (any bytes) can be trained on without a
// vocabulary file. Token id = byte value 0..255; id 256 (kEndOfText) separates documents.
//
// decode() is the inverse of encode() for ids 0..255. kEndOfText decodes to "\n\n" (a visible
// document break in sampled text). Ids outside the vocabulary — a model whose vocabulary is padded
// past 257 (e.g. to a multiple of 64) can sample them — decode to "?". Decoded text is the raw
// bytes: a model that samples half of a multi-byte UTF-8 character yields invalid UTF-8.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/text/tokenizer/tokenizer.hpp"

namespace tessera {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr std::int32_t kEndOfText = 256;
  static constexpr std::int32_t kVocabSize = 257;

  std::string name() const override { return "bytes"; }
  std::int32_t vocab_size() const override { return kVocabSize; }
  std::int32_t end_of_text() const override { return kEndOfText; }

  // One token per byte of `text`, in order (no end-of-text is added); encode() returns them.
  void encode_append(std::string_view text, std::vector<std::int32_t>& out) const override;

  std::string decode(std::span<const std::int32_t> tokens) const override;
  std::string decode_token(std::int32_t token) const;
};

}  // namespace tessera
