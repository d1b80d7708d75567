// BPE training with incremental pair counts and a max-heap with lazy deletion.
#include "tessera/text/tokenizer/bpe_trainer.hpp"

#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "tessera/text/tokenizer/byte_unicode.hpp"
#include "tessera/text/tokenizer/gpt2_pretokenizer.hpp"

namespace tessera {
namespace {

using PairKey = std::uint64_t;  // left id << 32 | right id
PairKey pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right);
}
std::int32_t left_of(PairKey key) { return static_cast<std::int32_t>(key >> 32); }
std::int32_t right_of(PairKey key) { return static_cast<std::int32_t>(key & 0xffffffffu); }

struct Word {
  std::vector<std::int32_t> symbols;
  std::int64_t count;
};

// Heap order: the larger count first; for equal counts the smaller pair key.
struct HeapEntry {
  std::int64_t count;
  PairKey key;
  bool operator<(const HeapEntry& other) const { return count != other.count ? count < other.count : key > other.key; }
};

class PairCounts {
 public:
  void add(const Word& word, std::size_t index, std::int64_t sign) {
    for (std::size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const PairKey key = pair_key(word.symbols[i], word.symbols[i + 1]);
      std::int64_t& count = counts_[key];
      count += sign * word.count;
      if (sign > 0) where_[key].insert(index);
      changed_.insert(key);
    }
  }
  // Pushes the new counts of the pairs changed since the last call.
  void publish() {
    for (const PairKey key : changed_) {
      const auto it = counts_.find(key);
      if (it == counts_.end()) continue;
      if (it->second <= 0) {
        counts_.erase(it);
        where_.erase(key);
      } else {
        heap_.push({it->second, key});
      }
    }
    changed_.clear();
  }
  // The most frequent pair with its count (count 0 when none is left).
  HeapEntry best() {
    while (!heap_.empty()) {
      const HeapEntry top = heap_.top();
      const auto it = counts_.find(top.key);
      if (it != counts_.end() && it->second == top.count) return top;
      heap_.pop();  // stale
    }
    return {0, 0};
  }
  std::set<std::size_t> take_words(PairKey key) {
    std::set<std::size_t> words = std::move(where_[key]);
    where_.erase(key);
    return words;
  }

 private:
  std::unordered_map<PairKey, std::int64_t> counts_;
  std::unordered_map<PairKey, std::set<std::size_t>> where_;  // words that held the pair (may be stale)
  std::set<PairKey> changed_;
  std::priority_queue<HeapEntry> heap_;
};

}  // namespace

void BpeTrainer::add_text(std::string_view text) {
  for (const std::string_view piece : gpt2_pretokenize(text)) ++piece_counts_[std::string(piece)];
}

BpeVocabulary BpeTrainer::train(std::int32_t vocab_size) const {
  if (vocab_size < 257) {
    throw std::invalid_argument("BPE vocabulary size " + std::to_string(vocab_size) +
                                " is below 257 (256 bytes and end-of-text); use e.g. 512 or more");
  }
  BpeVocabulary vocabulary;
  std::unordered_map<std::string, std::int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    vocabulary.tokens.push_back(bytes_to_token_text(std::string(1, static_cast<char>(b))));
    ids.emplace(vocabulary.tokens.back(), b);
  }
  std::vector<Word> words;
  words.reserve(piece_counts_.size());
  for (const auto& [piece, count] : piece_counts_) {
    Word word{{}, count};
    for (const char c : piece) word.symbols.push_back(static_cast<unsigned char>(c));
    words.push_back(std::move(word));
  }
  PairCounts pairs;
  for (std::size_t w = 0; w < words.size(); ++w) pairs.add(words[w], w, +1);
  pairs.publish();

  const std::int32_t merged_tokens = vocab_size - 1;  // the last id is end-of-text
  while (vocabulary.size() < merged_tokens) {
    const HeapEntry best = pairs.best();
    if (best.count < 2) break;
    const std::int32_t left = left_of(best.key), right = right_of(best.key);
    const std::string text =
        vocabulary.tokens[static_cast<std::size_t>(left)] + vocabulary.tokens[static_cast<std::size_t>(right)];
    auto [it, added] = ids.emplace(text, vocabulary.size());
    if (added) vocabulary.tokens.push_back(text);
    vocabulary.merges.emplace_back(vocabulary.tokens[static_cast<std::size_t>(left)],
                                   vocabulary.tokens[static_cast<std::size_t>(right)]);
    const std::int32_t merged = it->second;
    for (const std::size_t w : pairs.take_words(best.key)) {
      Word& word = words[w];
      pairs.add(word, w, -1);
      std::vector<std::int32_t> out;
      out.reserve(word.symbols.size());
      for (std::size_t i = 0; i < word.symbols.size();) {
        if (i + 1 < word.symbols.size() && word.symbols[i] == left && word.symbols[i + 1] == right) {
          out.push_back(merged);
          i += 2;
        } else {
          out.push_back(word.symbols[i++]);
        }
      }
      word.symbols = std::move(out);
      pairs.add(word, w, +1);
    }
    pairs.publish();
  }
  vocabulary.tokens.push_back(kEndOfTextToken);
  return vocabulary;
}

}  // namespace tessera
