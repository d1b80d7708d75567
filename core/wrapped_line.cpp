// wrapped_line: parts joined with ', ' (or another separator), a new indented line before a part that would not fit.
#include "tessera/core/wrapped_line.hpp"

namespace tessera {

std::string wrapped_line(const std::string& label, const std::vector<std::string>& parts, std::size_t width, char separator) {
  std::string text = label;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const std::size_t used = text.size() - line_start;
    const bool line_has_a_part = used > label.size();
    if (line_has_a_part && used + 1 + parts[i].size() + (last ? 0 : 1) > width) {  // " part," passes the width
      text += '\n';
      line_start = text.size();
      text.append(label.size(), ' ');
    }
    text += ' ';
    text += parts[i];
    if (!last) text += separator;
  }
  return text + '\n';
}

}  // namespace tessera
