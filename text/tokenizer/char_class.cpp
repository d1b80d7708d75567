// char_class over ICU's character database (u_charType, u_isUWhiteSpace).
#include "tessera/text/tokenizer/char_class.hpp"

#include <unicode/uchar.h>

namespace tessera {

CharClass char_class(std::uint32_t code_point) {
  const auto c = static_cast<UChar32>(code_point);
  if (code_point < 0x80) {  // the common case without a table lookup
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::kLetter;
    if (c >= '0' && c <= '9') return CharClass::kNumber;
    if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::kSpace;
    return CharClass::kOther;
  }
  const std::uint32_t mask = U_GET_GC_MASK(c);
  if ((mask & U_GC_L_MASK) != 0) return CharClass::kLetter;
  if ((mask & U_GC_N_MASK) != 0) return CharClass::kNumber;
  if (u_isUWhiteSpace(c)) return CharClass::kSpace;
  return CharClass::kOther;
}

}  // namespace tessera
