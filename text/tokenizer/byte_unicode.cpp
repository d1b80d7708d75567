// The bytes_to_unicode table, built once, and conversions between raw bytes and token text.
#include "tessera/text/tokenizer/byte_unicode.hpp"

#include <array>

#include "tessera/text/tokenizer/utf8.hpp"

namespace tessera {
namespace {

struct ByteTable {
  std::array<std::uint32_t, 256> code_point{};
  std::array<std::string, 256> text{};  // UTF-8 of code_point[b]
  ByteTable() {
    const auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    };
    std::uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      code_point[b] = printable(b) ? static_cast<std::uint32_t>(b) : next++;
      append_utf8(code_point[b], text[b]);
    }
  }
};

const ByteTable& table() {
  static const ByteTable t;
  return t;
}

}  // namespace

std::uint32_t byte_to_code_point(std::uint8_t byte) { return table().code_point[byte]; }

int code_point_to_byte(std::uint32_t cp) {
  if (cp < 256) return table().code_point[cp] == cp ? static_cast<int>(cp) : -1;
  // 256 + n is the n-th byte (in byte order) that does not stand for itself.
  if (cp >= 256 + 68) return -1;
  int n = static_cast<int>(cp - 256);
  for (int b = 0; b < 256; ++b) {
    if (table().code_point[b] != static_cast<std::uint32_t>(b) && n-- == 0) return b;
  }
  return -1;
}

std::string bytes_to_token_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += table().text[static_cast<unsigned char>(c)];
  return out;
}

bool token_text_to_bytes(std::string_view token_text, std::string& out) {
  out.clear();
  for (std::size_t at = 0; at < token_text.size();) {
    const Utf8Char c = next_utf8_char(token_text, at);
    const int byte = c.valid ? code_point_to_byte(c.code_point) : -1;
    if (byte < 0) return false;
    out.push_back(static_cast<char>(byte));
    at += c.bytes;
  }
  return true;
}

}  // namespace tessera
