// printable_text: decoded bytes as text a terminal shows — valid UTF-8, newlines and tabs kept,
// every other control character and every byte of an invalid sequence shown as '?'.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

std::string printable_text(std::string_view bytes);

}  // namespace tessera
