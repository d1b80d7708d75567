// UTF-8 stepping for the tokenizers: one character at a time, with invalid bytes kept as single
// bytes (so text that is not valid UTF-8 still tokenizes and decodes back to the same bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

struct Utf8Char {
  std::uint32_t code_point = 0;  // the character; for an invalid byte, the byte's value
  std::uint32_t bytes = 0;       // 1..4 bytes of the text it spans
  bool valid = false;            // false: a byte that does not start a well-formed sequence
};

// The character starting at text[at] (at < text.size()). Well-formed means the shortest encoding
// of a code point up to U+10FFFF that is not a surrogate; anything else is one invalid byte.
Utf8Char next_utf8_char(std::string_view text, std::size_t at);

// Appends the UTF-8 encoding of `code_point` (<= U+10FFFF) to `out`.
void append_utf8(std::uint32_t code_point, std::string& out);

}  // namespace tessera
