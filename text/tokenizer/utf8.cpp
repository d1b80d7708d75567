// UTF-8 decoding of one character (strict: no overlong forms, no surrogates) and encoding.
#include "tessera/text/tokenizer/utf8.hpp"

namespace tessera {

Utf8Char next_utf8_char(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(text[i])); };
  const std::uint32_t b0 = byte(at);
  const Utf8Char invalid{b0, 1, false};
  if (b0 < 0x80) return {b0, 1, true};
  std::uint32_t length = 0, cp = 0, min = 0;
  if ((b0 & 0xe0) == 0xc0) {
    length = 2, cp = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    length = 3, cp = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return invalid;  // a continuation byte or 0xf8..0xff
  }
  if (at + length > text.size()) return invalid;
  for (std::uint32_t k = 1; k < length; ++k) {
    const std::uint32_t b = byte(at + k);
    if ((b & 0xc0) != 0x80) return invalid;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return invalid;
  return {cp, length, true};
}

void append_utf8(std::uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace tessera
