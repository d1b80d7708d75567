// BpeVocabulary: the two files of a GPT-2-format byte-level BPE tokenizer, in memory.
//
//   vocab.json   {"token text": id, ...}: ids 0 .. n-1, each once; token text is the token's bytes
//                through GPT-2's bytes_to_unicode table (byte_unicode.hpp), "<|endoftext|>" as is
//   merges.txt   "#version: 0.2", then one merge per line, "left right" (token texts), in rank
//                order: the first line merges first
//
// GPT-2's own files (vocab.json + merges.txt from its release, 50257 tokens, 50000 merges) load
// as they are; tessera_prepare --bpe-vocab writes the same format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {

inline constexpr const char* kVocabFileName = "vocab.json";
inline constexpr const char* kMergesFileName = "merges.txt";
inline constexpr const char* kEndOfTextToken = "<|endoftext|>";

struct BpeVocabulary {
  std::vector<std::string> tokens;                          // id -> token text
  std::vector<std::pair<std::string, std::string>> merges;  // rank -> (left, right)

  std::int32_t size() const { return static_cast<std::int32_t>(tokens.size()); }
};

// Reads dir/vocab.json and dir/merges.txt. Throws std::runtime_error naming the file and what is
// wrong (missing, not JSON, not an object of at least one token, ids not 0..n-1, a merge line that
// is not two tokens, a merge whose parts or result are not in the vocabulary).
BpeVocabulary read_bpe_vocabulary(const std::filesystem::path& dir);

// Writes dir/vocab.json (in id order) and dir/merges.txt, each through a temporary file renamed
// when complete. The directory must exist. Throws std::runtime_error naming the file.
void write_bpe_vocabulary(const std::filesystem::path& dir, const BpeVocabulary& vocabulary);

// XXH64 of vocab.json's bytes followed by merges.txt's: what a token file records to tell that the
// files beside it are still the ones that made it. Throws std::runtime_error for a missing file.
std::uint64_t bpe_files_hash(const std::filesystem::path& dir);

}  // namespace tessera
