// BpeTokenizer: byte-level BPE, encoding and decoding exactly as GPT-2's tokenizer (encoder.py):
//   encode: cut the text into pieces (gpt2_pretokenizer.hpp); write each piece's bytes as token
//           text (byte_unicode.hpp); starting from single characters, repeatedly merge the
//           adjacent pair with the lowest merge rank, every occurrence left to right, until no
//           pair has a rank; then each symbol's id from the vocabulary.
//   decode: each id's token text back to bytes, concatenated ("<|endoftext|>" decodes as itself).
// Text that is not valid UTF-8 still encodes: its bytes are tokens like any others, and decode
// gives the same bytes back. "<|endoftext|>" in the text is ordinary text, never the special id.
//
// Thread-safe: a cache of encoded pieces sits behind a mutex.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/tokenizer.hpp"

namespace tessera {

class BpeTokenizer final : public Tokenizer {
 public:
  // `name`: "bpe" (trained by tessera_prepare) or "gpt2" (GPT-2's files), for messages and the
  // records of token files and checkpoints. Throws std::invalid_argument when the vocabulary has
  // no token for one of the 256 bytes (it could not encode every text).
  BpeTokenizer(BpeVocabulary vocabulary, std::string name);
  ~BpeTokenizer() override;

  std::string name() const override { return name_; }
  std::int32_t vocab_size() const override { return vocabulary_.size(); }
  // The id of "<|endoftext|>"; -1 when the vocabulary has none.
  std::int32_t end_of_text() const override { return end_of_text_; }
  void encode_append(std::string_view text, std::vector<std::int32_t>& out) const override;
  std::string decode(std::span<const std::int32_t> tokens) const override;

  const BpeVocabulary& vocabulary() const { return vocabulary_; }

 private:
  // The ids of one pre-tokenized piece (its bytes).
  std::vector<std::int32_t> encode_piece(std::string_view piece) const;

  BpeVocabulary vocabulary_;
  std::string name_;
  std::unordered_map<std::string, std::int32_t> ids_;    // token text -> id
  std::unordered_map<std::string, std::int32_t> ranks_;  // "left right" -> merge rank
  std::vector<std::string> token_bytes_;                 // id -> raw bytes
  std::int32_t end_of_text_ = -1;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;  // piece bytes -> ids
};

}  // namespace tessera
