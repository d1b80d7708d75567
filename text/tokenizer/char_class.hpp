// The character classes of GPT-2's pre-tokenization pattern, from ICU's Unicode data:
// letters (\p{L}: general categories Lu Ll Lt Lm Lo), numbers (\p{N}: Nd Nl No), whitespace
// (\s: the White_Space property) and everything else.
#pragma once

#include <cstdint>

namespace tessera {

enum class CharClass : std::uint8_t { kLetter, kNumber, kSpace, kOther };

CharClass char_class(std::uint32_t code_point);

}  // namespace tessera
