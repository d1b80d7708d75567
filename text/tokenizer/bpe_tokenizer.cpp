// BpeTokenizer: GPT-2's bpe() over each pre-tokenized piece, with a cache of pieces.
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"

#include <limits>
#include <stdexcept>

#include "tessera/text/tokenizer/byte_unicode.hpp"

namespace tessera {
namespace {

constexpr std::size_t kMaxCachedPieces = 1 << 20;  // the cache is dropped when it grows past this

std::string pair_key(const std::string& left, const std::string& right) { return left + ' ' + right; }

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocabulary vocabulary, std::string name, BpeEncoding encoding)
    : vocabulary_(std::move(vocabulary)),
      name_(std::move(name)),
      encoding_(std::move(encoding)),
      added_tokens_(encoding_.added_tokens) {
  const auto n = static_cast<std::size_t>(vocabulary_.size());
  ids_.reserve(n);
  token_bytes_.resize(n);
  for (std::size_t id = 0; id < n; ++id) {
    const std::string& text = vocabulary_.tokens[id];
    ids_.emplace(text, static_cast<std::int32_t>(id));
    if (!token_text_to_bytes(text, token_bytes_[id])) token_bytes_[id] = text;  // not byte-level: as written
  }
  for (int b = 0; b < 256; ++b) {
    const std::string text = bytes_to_token_text(std::string(1, static_cast<char>(b)));
    if (ids_.count(text) == 0) {
      throw std::invalid_argument(name_ + " tokenizer: the vocabulary has no token for byte " + std::to_string(b) +
                                  " ('" + text + "'); a byte-level BPE vocabulary holds all 256 bytes");
    }
  }
  ranks_.reserve(vocabulary_.merges.size());
  for (std::size_t r = 0; r < vocabulary_.merges.size(); ++r) {
    const auto& [left, right] = vocabulary_.merges[r];
    ranks_.emplace(pair_key(left, right), static_cast<std::int32_t>(r));  // the first rank of a repeated line wins
  }
  for (const AddedToken& token : encoding_.added_tokens) {
    if (token.id < 0 || token.id >= vocabulary_.size()) {
      throw std::invalid_argument(name_ + " tokenizer: added token '" + token.content + "' has id " +
                                  std::to_string(token.id) + ", outside the vocabulary's 0.." +
                                  std::to_string(vocabulary_.size() - 1));
    }
  }
  if (const auto it = ids_.find(encoding_.end_of_text); it != ids_.end()) end_of_text_ = it->second;
}

BpeTokenizer::~BpeTokenizer() = default;

std::vector<std::int32_t> BpeTokenizer::encode_piece(std::string_view piece) const {
  if (encoding_.whole_pieces == WholePieces::kVocabularyFirst) {
    if (const auto it = ids_.find(bytes_to_token_text(piece)); it != ids_.end()) return {it->second};
  }
  std::vector<std::string> word;  // symbols, as token text
  word.reserve(piece.size());
  for (const char c : piece) word.push_back(bytes_to_token_text(std::string_view(&c, 1)));
  while (word.size() > 1) {
    std::int32_t best = std::numeric_limits<std::int32_t>::max();
    std::size_t best_at = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = ranks_.find(pair_key(word[i], word[i + 1]));
      if (it != ranks_.end() && it->second < best) best = it->second, best_at = i;
    }
    if (best == std::numeric_limits<std::int32_t>::max()) break;
    const std::string first = word[best_at], second = word[best_at + 1];
    std::vector<std::string> merged;
    merged.reserve(word.size());
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(std::move(word[i]));
        i += 1;
      }
    }
    word = std::move(merged);
  }
  std::vector<std::int32_t> ids;
  ids.reserve(word.size());
  for (const std::string& symbol : word) {
    const auto it = ids_.find(symbol);
    if (it == ids_.end()) {
      throw std::runtime_error(name_ + " tokenizer: merges produce '" + symbol +
                               "', which vocab.json does not hold; the two files do not belong together");
    }
    ids.push_back(it->second);
  }
  return ids;
}

void BpeTokenizer::encode_append(std::string_view text, std::vector<std::int32_t>& out) const {
  if (added_tokens_.empty()) return encode_text(text, out);
  added_tokens_.split(
      text, [&](std::string_view part) { encode_text(part, out); }, [&](std::int32_t id) { out.push_back(id); });
}

void BpeTokenizer::encode_text(std::string_view text, std::vector<std::int32_t>& out) const {
  for (const std::string_view piece : pretokenize(encoding_.pretokenizer, text)) {
    const std::string key(piece);
    {
      const std::lock_guard<std::mutex> lock(cache_mutex_);
      if (const auto it = cache_.find(key); it != cache_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    std::vector<std::int32_t> ids = encode_piece(piece);
    out.insert(out.end(), ids.begin(), ids.end());
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCachedPieces) cache_.clear();
    cache_.emplace(key, std::move(ids));
  }
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> tokens) const {
  std::string text;
  for (const std::int32_t id : tokens) {
    if (id >= 0 && id < vocab_size()) {
      text += token_bytes_[static_cast<std::size_t>(id)];
    } else {
      text.push_back(kUnknownTokenChar);
    }
  }
  return text;
}

}  // namespace tessera
