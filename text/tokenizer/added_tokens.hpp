// AddedTokens: the added tokens of a Hugging Face tokenizer.json (special tokens such as
// "<|endoftext|>" or "<|begin_of_text|>"), found in the text before pre-tokenization as the
// `tokenizers` library finds them: every occurrence is its token's id, whatever surrounds it, and
// the text between occurrences is tokenized as usual. The library looks in two passes, as Tessera
// does: first for the tokens marked normalized: false, then, in the text left between those, for
// the tokens marked normalized: true; each pass takes the leftmost occurrence and, of the tokens
// that start there, the longest. (With no normalizer, which Tessera requires, normalized text is
// the text itself.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct AddedToken {
  std::string content;  // the text matched, as UTF-8 bytes
  std::int32_t id = 0;
  bool normalized = false;  // found in the second pass
};

class AddedTokens {
 public:
  AddedTokens() = default;
  explicit AddedTokens(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

  // Calls `text_part(part)` for each stretch of ordinary text and `token(id)` for each added
  // token found, in the order they appear in `text`. Without added tokens: text_part(text) once
  // (nothing for empty text).
  void split(std::string_view text, const std::function<void(std::string_view)>& text_part,
             const std::function<void(std::int32_t)>& token) const;

 private:
  // The pass over `text` with the tokens of `pass` (0: normalized false, 1: true).
  void split_pass(int pass, std::string_view text, const std::function<void(std::string_view)>& text_part,
                  const std::function<void(std::int32_t)>& token) const;

  std::vector<AddedToken> tokens_;
  std::vector<std::int32_t> by_first_byte_[2][256];  // indices into tokens_, per pass, by first byte
};

}  // namespace tessera
