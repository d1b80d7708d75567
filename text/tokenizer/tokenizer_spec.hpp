// TokenizerSpec: which tokenizer made a corpus, as token files and checkpoints record it, and
// loading it. Kinds:
//   bytes  ByteTokenizer: ids are bytes, 256 is end-of-text (257 tokens); needs no files
//   bpe    a byte-level BPE learned by tessera_prepare --bpe-vocab: vocab.json + merges.txt in `dir`
//   gpt2   GPT-2's BPE (llm.c and nanoGPT data, 50257 tokens); its vocab.json + merges.txt come from
//          the user (--tokenizer DIR): without them the ids train but do not decode
//   hf     a Hugging Face tokenizer.json of a byte-level BPE (hf_tokenizer_reader.hpp): `dir` is a
//          directory holding tokenizer.json (and no vocab.json), or the tokenizer.json file itself
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/text/tokenizer/tokenizer.hpp"

namespace tessera {

// The values are what token files record (text/data/token_file.hpp): never renumber them.
enum class TokenizerKind : std::uint8_t { kBytes = 1, kBpe = 2, kGpt2 = 3, kHf = 4 };

inline constexpr std::int32_t kGpt2VocabSize = 50257;

const char* tokenizer_kind_name(TokenizerKind kind);  // "bytes", "bpe", "gpt2", "hf"
// Throws std::invalid_argument naming `what` for anything but bytes, bpe, gpt2, hf.
TokenizerKind parse_tokenizer_kind(std::string_view text, std::string_view what);

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kBytes;
  std::string dir;               // bpe, gpt2: directory of vocab.json and merges.txt; hf: of tokenizer.json,
                                 // or the file; "" when unknown
  std::int32_t vocab_size = 0;   // tokens of the tokenizer (before any padding of the model's)
  std::uint64_t files_hash = 0;  // bpe_files_hash(dir) or hf_tokenizer_hash(dir) when the files were made;
                                 // 0: not checked

  bool operator==(const TokenizerSpec&) const = default;
  std::string describe() const;  // "bpe, 512 tokens, data/ (vocab.json, merges.txt)"
};

TokenizerSpec bytes_tokenizer_spec();                     // kBytes, 257 tokens
TokenizerSpec gpt2_tokenizer_spec(std::string dir = "");  // kGpt2, 50257 tokens

// The spec of the BPE files in `dir` as they are now, their vocabulary size and hash: kind hf when
// `dir` names a tokenizer.json (names_hf_tokenizer: the file, or a directory holding it and no
// vocab.json), else `kind` (bpe or gpt2; bpe for hf). Throws std::runtime_error for missing or
// invalid files.
TokenizerSpec bpe_tokenizer_spec(const std::string& dir, TokenizerKind kind);

// --tokenizer VALUE over what the data or checkpoint recorded: "bytes", a directory holding
// vocab.json and merges.txt (kind: `recorded`'s when it is bpe or gpt2, else bpe), or a
// tokenizer.json or directory holding one (kind hf). Empty: recorded.
TokenizerSpec apply_tokenizer_flag(const TokenizerSpec& recorded, const std::string& value);

// The tokenizer `spec` names. nullptr for bpe/gpt2 without a dir (nothing to decode with). Throws
// std::runtime_error naming the directory when the files are missing or invalid, when their hash
// differs from a recorded one (they were replaced since the data was made), or when their
// vocabulary size differs from the spec's.
std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerSpec& spec);

}  // namespace tessera
