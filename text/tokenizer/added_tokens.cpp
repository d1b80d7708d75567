// Added tokens found leftmost-longest, in the library's two passes.
#include "tessera/text/tokenizer/added_tokens.hpp"

namespace tessera {

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (std::size_t k = 0; k < tokens_.size(); ++k) {
    const AddedToken& t = tokens_[k];
    if (t.content.empty()) continue;  // never matches
    by_first_byte_[t.normalized ? 1 : 0][static_cast<unsigned char>(t.content[0])].push_back(
        static_cast<std::int32_t>(k));
  }
}

void AddedTokens::split(std::string_view text, const std::function<void(std::string_view)>& text_part,
                        const std::function<void(std::int32_t)>& token) const {
  split_pass(
      0, text, [&](std::string_view part) { split_pass(1, part, text_part, token); }, token);
}

void AddedTokens::split_pass(int pass, std::string_view text, const std::function<void(std::string_view)>& text_part,
                             const std::function<void(std::int32_t)>& token) const {
  std::size_t done = 0;  // text before this is handed on
  for (std::size_t i = 0; i < text.size();) {
    const std::vector<std::int32_t>& candidates = by_first_byte_[pass][static_cast<unsigned char>(text[i])];
    const AddedToken* best = nullptr;
    for (const std::int32_t k : candidates) {
      const AddedToken& t = tokens_[static_cast<std::size_t>(k)];
      if (text.compare(i, t.content.size(), t.content) == 0 &&
          (best == nullptr || t.content.size() > best->content.size()))
        best = &t;
    }
    if (best == nullptr) {
      ++i;
      continue;
    }
    if (i > done) text_part(text.substr(done, i - done));
    token(best->id);
    i += best->content.size();
    done = i;
  }
  if (text.size() > done) text_part(text.substr(done));
}

}  // namespace tessera
