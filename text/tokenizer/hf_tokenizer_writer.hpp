// Writing a BpeVocabulary (GPT-2 format: one tessera_prepare --bpe-vocab learned, or GPT-2's) as
// Hugging Face tokenizer files, so that a model export carries its tokenizer and
// `transformers.AutoTokenizer.from_pretrained(dir)` encodes with the same ids as BpeTokenizer:
//   tokenizer.json         the `tokenizers` library's format: model BPE with the vocabulary and
//                          merges, a ByteLevel pre-tokenizer (GPT-2's pattern), ByteLevel
//                          post-processor and decoder, no normalizer; "<|endoftext|>" an added
//                          special token
//   tokenizer_config.json  tokenizer_class PreTrainedTokenizerFast, with "<|endoftext|>" as the
//                          bos, eos and unk token
// One difference: the library finds "<|endoftext|>" written in a text and gives it the special id,
// where BpeTokenizer over vocab.json encodes it as ordinary text (read back with
// read_hf_tokenizer, Tessera matches the library again).
#pragma once

#include <filesystem>

#include "tessera/text/tokenizer/bpe_vocabulary.hpp"

namespace tessera {

inline constexpr const char* kHfTokenizerConfigFileName = "tokenizer_config.json";

// Writes dir/tokenizer.json and dir/tokenizer_config.json, each through a temporary file renamed
// when complete. The directory must exist. Throws std::invalid_argument when the vocabulary has no
// "<|endoftext|>" (the end-of-text token both files name), std::runtime_error naming a file that
// cannot be written.
void write_hf_tokenizer_files(const std::filesystem::path& dir, const BpeVocabulary& vocabulary);

}  // namespace tessera
