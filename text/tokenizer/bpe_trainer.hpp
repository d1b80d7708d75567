// BpeTrainer: learns a byte-level BPE vocabulary from text, deterministically (same texts in the
// same order -> the same files, on any machine).
//
//   BpeTrainer trainer;
//   for (const std::string& document : documents) trainer.add_text(document);
//   BpeVocabulary vocabulary = trainer.train(512);
//
// Texts are cut into pieces with GPT-2's pattern (gpt2_pretokenizer.hpp), so merges never cross a
// piece. Ids 0..255 are the bytes (id = byte value), then one token per merge, then
// "<|endoftext|>" last. Each merge joins the adjacent pair of symbols that occurs most often over
// all pieces (counted with the pieces' frequencies); ties go to the pair whose (left id, right id)
// is smallest. A merge whose text equals an existing token's (a+bc after ab+c) is recorded and
// reuses that token's id. Training stops at vocab_size tokens or when no pair occurs twice.
// Pair counts are kept incrementally: each merge touches only the pieces that hold the pair.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "tessera/text/tokenizer/bpe_vocabulary.hpp"

namespace tessera {

class BpeTrainer {
 public:
  // Counts the pieces of `text`.
  void add_text(std::string_view text);
  // vocab_size >= 257 (the bytes and end-of-text); throws std::invalid_argument otherwise.
  BpeVocabulary train(std::int32_t vocab_size) const;

  std::int64_t distinct_pieces() const { return static_cast<std::int64_t>(piece_counts_.size()); }

 private:
  std::map<std::string, std::int64_t> piece_counts_;  // ordered: training does not depend on hashing
};

}  // namespace tessera
