// BpeTokenizer: byte-level BPE, encoding and decoding exactly as GPT-2's tokenizer (encoder.py) by
// default, or as the `tokenizers` library does for a tokenizer.json (BpeEncoding, read by
// hf_tokenizer_reader.hpp):
//   encode: find the added tokens (added_tokens.hpp; none by default) and give each its id; cut the
//           text between them into pieces (pretokenizer.hpp: GPT-2's pattern by default, or Llama
//           3's); with WholePieces::kVocabularyFirst, a piece that is itself a token is that token;
//           else write each piece's bytes as token
//           text (byte_unicode.hpp); starting from single characters, repeatedly merge the
//           adjacent pair with the lowest merge rank, every occurrence left to right, until no
//           pair has a rank; then each symbol's id from the vocabulary.
//   decode: each id's token text back to bytes, concatenated ("<|endoftext|>" decodes as itself).
// Text that is not valid UTF-8 still encodes: its bytes are tokens like any others, and decode
// gives the same bytes back. "<|endoftext|>" in the text is ordinary text, never the special id,
// unless it is one of the encoding's added tokens.
//
// Thread-safe: a cache of encoded pieces sits behind a mutex.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tessera/text/tokenizer/added_tokens.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"
#include "tessera/text/tokenizer/pretokenizer.hpp"
#include "tessera/text/tokenizer/tokenizer.hpp"

namespace tessera {

// What is done with a piece that is itself a token of the vocabulary.
enum class WholePieces : std::uint8_t {
  kMerge,            // it goes through the merges like any other (GPT-2)
  kVocabularyFirst,  // it is that token, without merges (tokenizer.json's ignore_merges: Llama 3)
};

// How a BpeTokenizer cuts text and finds its tokens; the defaults are GPT-2's encoder.py.
struct BpeEncoding {
  Pretokenizer pretokenizer = Pretokenizer::kGpt2;
  WholePieces whole_pieces = WholePieces::kMerge;
  std::vector<AddedToken> added_tokens;       // found in the text before anything else
  std::string end_of_text = kEndOfTextToken;  // the token that separates documents
};

class BpeTokenizer final : public Tokenizer {
 public:
  // `name`: "bpe" (trained by tessera_prepare) or "gpt2" (GPT-2's files), for messages and the
  // records of token files and checkpoints. Throws std::invalid_argument when the vocabulary has
  // no token for one of the 256 bytes (it could not encode every text), or when an added token's
  // id is outside the vocabulary.
  BpeTokenizer(BpeVocabulary vocabulary, std::string name, BpeEncoding encoding = {});
  ~BpeTokenizer() override;

  std::string name() const override { return name_; }
  std::int32_t vocab_size() const override { return vocabulary_.size(); }
  // The id of the encoding's end_of_text token ("<|endoftext|>"); -1 when the vocabulary has none.
  std::int32_t end_of_text() const override { return end_of_text_; }
  void encode_append(std::string_view text, std::vector<std::int32_t>& out) const override;
  std::string decode(std::span<const std::int32_t> tokens) const override;

  const BpeVocabulary& vocabulary() const { return vocabulary_; }
  const BpeEncoding& encoding() const { return encoding_; }

 private:
  // The ids of text that holds no added token.
  void encode_text(std::string_view text, std::vector<std::int32_t>& out) const;
  // The ids of one pre-tokenized piece (its bytes).
  std::vector<std::int32_t> encode_piece(std::string_view piece) const;

  BpeVocabulary vocabulary_;
  std::string name_;
  BpeEncoding encoding_;
  AddedTokens added_tokens_;
  std::unordered_map<std::string, std::int32_t> ids_;    // token text -> id
  std::unordered_map<std::string, std::int32_t> ranks_;  // "left right" -> merge rank
  std::vector<std::string> token_bytes_;                 // id -> raw bytes
  std::int32_t end_of_text_ = -1;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;  // piece bytes -> ids
};

}  // namespace tessera
