// Reading a Hugging Face tokenizer.json (the `tokenizers` library's format) of a byte-level BPE, so
// that BpeTokenizer encodes with the same ids as the library's
// `Tokenizer.encode(text, add_special_tokens=False)`: GPT-2's tokenizer.json, Llama 3's, and ones
// the library trains with a ByteLevel pre-tokenizer.
//
// What Tessera reads:
//   model           type "BPE"; vocab {"token": id}; merges as "a b" strings or ["a", "b"] pairs,
//                   in rank order; ignore_merges (Llama 3: a piece that is itself a token is taken
//                   whole); the vocabulary holds the 256 byte tokens; no dropout, no
//                   continuing_subword_prefix or end_of_word_suffix, byte_fallback false
//   added_tokens    each with its id (beyond model.vocab's, or the same token at the same id),
//                   found in the text as the library finds them (added_tokens.hpp); single_word,
//                   lstrip and rstrip false
//   pre_tokenizer   ByteLevel with use_regex true (GPT-2's pattern), or a Sequence of a Split with
//                   GPT-2's or Llama 3's pattern (behavior Isolated, invert false) and a ByteLevel
//                   with use_regex false; add_prefix_space false
//   normalizer      none (null); truncation and padding null; decoder null or ByteLevel
//   post_processor  not applied: special tokens a template adds around a text (Llama 3's
//                   <|begin_of_text|>) are not added
// Anything else is refused with a std::runtime_error naming the file, the field and its value.
// End of text (what tessera_prepare puts between documents): "<|endoftext|>" when the tokenizer
// has it, else "<|end_of_text|>" (Llama 3's); a tokenizer with neither is refused.
#pragma once

#include <cstdint>
#include <filesystem>

#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_vocabulary.hpp"

namespace tessera {

inline constexpr const char* kHfTokenizerFileName = "tokenizer.json";
inline constexpr const char* kEndOfTextTokenLlama3 = "<|end_of_text|>";

struct HfTokenizer {
  BpeVocabulary vocabulary;  // every id 0..n-1 (model.vocab's, then the added tokens'); the merges
  BpeEncoding encoding;      // pre-tokenizer, ignore_merges, added tokens, end-of-text
};

// The tokenizer.json `path` names: `path` itself when it is not a directory, else path/tokenizer.json.
std::filesystem::path hf_tokenizer_file(const std::filesystem::path& path);

// Whether `path` names a tokenizer.json rather than GPT-2-format files: a file, or a directory that
// holds tokenizer.json and no vocab.json (a directory with both is read as vocab.json + merges.txt).
bool names_hf_tokenizer(const std::filesystem::path& path);

// Reads the tokenizer.json `path` names. Throws std::runtime_error naming the file for a missing
// file, invalid JSON, and anything above that Tessera does not read.
HfTokenizer read_hf_tokenizer(const std::filesystem::path& path);

// XXH64 of the tokenizer.json's bytes: what token files and checkpoints record to tell that it is
// still the file that made them. Throws std::runtime_error for a missing file.
std::uint64_t hf_tokenizer_hash(const std::filesystem::path& path);

}  // namespace tessera
