// The GPT-2 pre-tokenization pattern, alternative by alternative.
#include "tessera/text/tokenizer/gpt2_pretokenizer.hpp"

#include "tessera/text/tokenizer/char_class.hpp"
#include "tessera/text/tokenizer/utf8.hpp"

namespace tessera {
namespace {

struct Cursor {
  std::string_view text;

  // Class and byte length of the character at `at` (invalid bytes are symbols).
  std::pair<CharClass, std::size_t> at(std::size_t i) const {
    const Utf8Char c = next_utf8_char(text, i);
    return {c.valid ? char_class(c.code_point) : CharClass::kOther, c.bytes};
  }
  // End of the run of characters of class `cls` starting at i (i when there is none).
  std::size_t run_end(std::size_t i, CharClass cls) const {
    while (i < text.size()) {
      const auto [c, n] = at(i);
      if (c != cls) break;
      i += n;
    }
    return i;
  }
};

// 's 't 're 've 'm 'll 'd at i: the length matched, 0 when none.
std::size_t contraction(std::string_view text, std::size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  const char a = text[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= text.size()) return 0;
  const char b = text[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// The end of the piece starting at i.
std::size_t piece_end(const Cursor& cursor, std::size_t i) {
  const std::string_view text = cursor.text;
  if (const std::size_t n = contraction(text, i); n > 0) return i + n;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional space, then a run of one class.
  // (Without the space there is nothing to try: a space is in none of the three classes.)
  const std::size_t start = text[i] == ' ' ? i + 1 : i;
  for (const CharClass cls : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
    if (const std::size_t end = cursor.run_end(start, cls); end > start) return end;
  }
  // '\s+(?!\S)' then '\s+': i starts a whitespace run.
  const std::size_t end = cursor.run_end(i, CharClass::kSpace);
  if (end == text.size()) return end;
  // Followed by a non-space: give back the run's last character when the rest is not empty.
  std::size_t last = i;
  for (std::size_t k = i; k < end; k += cursor.at(k).second) last = k;
  return last > i ? last : end;
}

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  const Cursor cursor{text};
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t end = piece_end(cursor, i);
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

}  // namespace tessera
