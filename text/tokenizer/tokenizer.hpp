// Tokenizer: text <-> token ids, the interface train_gpt, tessera_prepare and tessera_generate use
// whatever tokenizer made the data (ByteTokenizer, text/tokenizer/byte_tokenizer.hpp; BpeTokenizer,
// bpe_tokenizer.hpp). Implementations are immutable after construction; encode and decode may be
// called from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// What decode writes for an id outside the vocabulary.
inline constexpr char kUnknownTokenChar = '?';

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual std::string name() const = 0;          // "bytes", "bpe", "gpt2"
  virtual std::int32_t vocab_size() const = 0;   // ids are 0 .. vocab_size() - 1
  virtual std::int32_t end_of_text() const = 0;  // the id that separates documents

  // Appends the ids of `text` to `out` (no end-of-text is added).
  virtual void encode_append(std::string_view text, std::vector<std::int32_t>& out) const = 0;
  // The text of `tokens`, as bytes (a cut through a multi-byte character gives invalid UTF-8).
  // Ids outside the vocabulary decode to "?".
  virtual std::string decode(std::span<const std::int32_t> tokens) const = 0;

  std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> out;
    encode_append(text, out);
    return out;
  }
};

}  // namespace tessera
