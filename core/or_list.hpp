// or_list: choices as a sentence lists them — "a", "a or b", "a, b or c" (messages that offer the
// valid values of a setting).
#pragma once

#include <string>
#include <vector>

namespace tessera {

inline std::string or_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace tessera
