// printable_text over next_utf8_char.
#include "tessera/text/tokenizer/printable_text.hpp"

#include "tessera/text/tokenizer/utf8.hpp"

namespace tessera {

std::string printable_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const Utf8Char c = next_utf8_char(bytes, i);
    const bool control = c.code_point < 0x20 ? (c.code_point != '\n' && c.code_point != '\t')
                                             : (c.code_point >= 0x7f && c.code_point < 0xa0);
    if (c.valid && !control) {
      out.append(bytes.substr(i, c.bytes));
    } else {
      out.push_back('?');
    }
    i += c.bytes;
  }
  return out;
}

}  // namespace tessera
