// The Llama 3 pre-tokenization pattern, alternative by alternative.
#include "tessera/text/tokenizer/llama3_pretokenizer.hpp"

#include "tessera/text/tokenizer/char_class.hpp"
#include "tessera/text/tokenizer/utf8.hpp"

namespace tessera {
namespace {

constexpr std::uint32_t kLongS = 0x17f;  // 'ſ', which case-folds to 's' as (?i) compares

struct Char {
  std::uint32_t code_point;
  CharClass cls;
  std::size_t bytes;
};

Char char_at(std::string_view text, std::size_t i) {
  const Utf8Char c = next_utf8_char(text, i);
  return {c.code_point, c.valid ? char_class(c.code_point) : CharClass::kOther, c.bytes};
}

bool is_newline(std::string_view text, std::size_t i) { return text[i] == '\r' || text[i] == '\n'; }

std::size_t run_end(std::string_view text, std::size_t i, CharClass cls) {
  while (i < text.size()) {
    const Char c = char_at(text, i);
    if (c.cls != cls) break;
    i += c.bytes;
  }
  return i;
}

// The case-folded ASCII letter of the character at i ('ſ' is 's'), 0 for anything else; its
// length in `bytes`.
char folded_letter(std::string_view text, std::size_t i, std::size_t& bytes) {
  const Char c = char_at(text, i);
  bytes = c.bytes;
  if (c.code_point == kLongS) return 's';
  if (c.code_point < 0x80 && c.cls == CharClass::kLetter) return static_cast<char>(c.code_point | 0x20);
  return 0;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: the length matched, 0 when none.
std::size_t contraction(std::string_view text, std::size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  std::size_t n1 = 0, n2 = 0;
  const char a = folded_letter(text, i + 1, n1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 1 + n1;
  if (i + 1 + n1 >= text.size()) return 0;
  const char b = folded_letter(text, i + 1 + n1, n2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 1 + n1 + n2;
  return 0;
}

// The end of the piece starting at i.
std::size_t piece_end(std::string_view text, std::size_t i) {
  if (const std::size_t n = contraction(text, i); n > 0) return i + n;
  const Char first = char_at(text, i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (first.cls != CharClass::kLetter && first.cls != CharClass::kNumber && !is_newline(text, i)) {
    if (const std::size_t end = run_end(text, i + first.bytes, CharClass::kLetter); end > i + first.bytes) return end;
  }
  if (first.cls == CharClass::kLetter) return run_end(text, i, CharClass::kLetter);
  // \p{N}{1,3}
  if (first.cls == CharClass::kNumber) {
    std::size_t end = i;
    for (int k = 0; k < 3 && end < text.size(); ++k) {
      const Char c = char_at(text, end);
      if (c.cls != CharClass::kNumber) break;
      end += c.bytes;
    }
    return end;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const std::size_t start = text[i] == ' ' ? i + 1 : i;
  if (std::size_t end = run_end(text, start, CharClass::kOther); end > start) {
    while (end < text.size() && is_newline(text, end)) ++end;
    return end;
  }
  // i starts a whitespace run. '\s*[\r\n]+': it ends after the run's last newline, when it has one.
  const std::size_t end = run_end(text, i, CharClass::kSpace);
  std::size_t after_newline = 0, last = i;
  for (std::size_t k = i; k < end; k += char_at(text, k).bytes) {
    if (is_newline(text, k)) after_newline = k + 1;
    last = k;
  }
  if (after_newline > 0) return after_newline;
  // '\s+(?!\S)' then '\s+': followed by a non-space, the run gives back its last character when
  // the rest is not empty.
  if (end == text.size()) return end;
  return last > i ? last : end;
}

}  // namespace

std::vector<std::string_view> llama3_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t end = piece_end(text, i);
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

}  // namespace tessera
