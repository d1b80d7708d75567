// unwrapped_lines: program output with its wrapped lines joined again. A line the programs wrap
// (core/wrapped_line.hpp) continues on lines indented past its label; each such continuation is
// appended to the line before it after one space, so a test can look for a whole line.
#pragma once

#include <string>

namespace tessera::testing {

inline std::string unwrapped_lines(const std::string& output) {
  std::string joined;
  std::size_t at = 0;
  while (at < output.size()) {
    std::size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(at, end - at);
    const std::size_t text = line.find_first_not_of(' ');
    if (text != std::string::npos && text >= 2 && !joined.empty() && joined.back() == '\n') {
      joined.back() = ' ';  // a continuation: onto the line before it
      joined += line.substr(text);
    } else {
      joined += line;
    }
    joined += '\n';
    at = end + 1;
  }
  return joined;
}

}  // namespace tessera::testing
